"""What the servers' state means for a scope's published candidates (``settle_candidates``, pure)."""

from __future__ import annotations

from trainers.live.scopes import settle_candidates


def test_nothing_gone_settles_nothing() -> None:
    got = settle_candidates(["acme.1", "acme.2"], {"0", "acme.1", "acme.2"}, ["0", "acme.1", "acme.2"], "0")
    assert got.gone == [] and got.reset_to is None and got.pending == ["acme.1", "acme.2"]


def test_older_candidates_set_aside_as_superseded_do_not_reset_the_line() -> None:
    # the control plane gates only the newest candidate and discards the older ones it supersedes
    got = settle_candidates(
        ["acme.3", "acme.6", "acme.9"], {"0", "acme.9"}, ["0", "acme.3", "acme.6", "acme.9"], "0"
    )
    assert got.gone == ["acme.3", "acme.6"] and got.reset_to is None and got.pending == ["acme.9"]


def test_the_newest_turned_down_goes_back_to_the_promoted_version_still_kept() -> None:
    # acme.3 was promoted (a tenant's own version stays kept beside the default); acme.6 then was refused
    got = settle_candidates(["acme.3", "acme.6"], {"0", "acme.3"}, ["0", "acme.3", "acme.6"], "0")
    assert got.gone == ["acme.6"] and got.reset_to == "acme.3" and got.pending == []


def test_a_line_turned_down_whole_goes_back_to_the_base() -> None:
    got = settle_candidates(["acme.1", "acme.2"], {"0", "acme.7"}, ["0", "acme.1", "acme.2"], "0")
    assert got.gone == ["acme.1", "acme.2"] and got.reset_to == "0"
