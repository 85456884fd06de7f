"""Which trajectory a call lands in: explicit header, history linking across turns, tenants kept apart."""

from __future__ import annotations

import httpx
import openai

from sluice.events import reconstruct_messages
from tests.pipeline.proxy.conftest import KEY, KEY_GLOBEX, LiveProxy


def test_header_history_and_tenant_isolation(live_proxy: LiveProxy) -> None:
    acme = openai.OpenAI(base_url=live_proxy.url + "/v1", api_key=KEY, max_retries=0)
    globex = openai.OpenAI(base_url=live_proxy.url + "/v1", api_key=KEY_GLOBEX, max_retries=0)

    # three turns, no id given: linked by history, deltas only
    history = [{"role": "system", "content": "sys prompt"}, {"role": "user", "content": "turn one"}]
    for turn in ("turn two", "turn three", None):
        reply = acme.chat.completions.create(model="plain", messages=history)
        history.append({"role": "assistant", "content": reply.choices[0].message.content})
        if turn:
            history.append({"role": "user", "content": turn})

    # the same conversation from another tenant never joins acme's trajectory
    globex.chat.completions.create(
        model="plain", messages=history[:4], extra_headers={"x-sluice-consent": "true"}
    )

    # explicit id in a header, and n=2 where the agent continues from choice 1
    explicit = {
        "x-sluice-trajectory-id": "run-7",
        "x-sluice-consent": "false",
        "x-sluice-data-class": "restricted",
    }
    branch = [{"role": "user", "content": "pick one"}]
    two = acme.chat.completions.create(model="plain", messages=branch, n=2, extra_headers=explicit)
    branch += [
        {"role": "assistant", "content": two.choices[1].message.content},
        {"role": "user", "content": "more"},
    ]
    acme.chat.completions.create(
        model="plain", messages=branch
    )  # no header: history finds run-7 via choice 1

    # a header that tries to widen what the key allows is ignored; a bogus class is a 400
    bad = httpx.post(
        live_proxy.url + "/v1/chat/completions",
        headers={"authorization": f"Bearer {KEY}", "x-sluice-data-class": "top-secret"},
        json={"model": "plain", "messages": [{"role": "user", "content": "x"}]},
    )
    assert bad.status_code == 400 and "top-secret" in bad.json()["error"]["message"]

    events = live_proxy.events(6)
    by_tenant = {}
    for e in events:
        by_tenant.setdefault((e.tenant, e.trajectory_id), []).append(e)
    (linked,) = [v for (t, tid), v in by_tenant.items() if t == "acme" and len(v) == 3]
    linked.sort(key=lambda e: e.step_index)
    assert [e.step_index for e in linked] == [0, 1, 2]
    assert [e.observation.prefix_message_count for e in linked] == [0, 3, 5]
    assert [[m.content for m in e.observation.messages] for e in linked] == [
        ["sys prompt", "turn one"],
        ["turn two"],
        ["turn three"],
    ]
    rebuilt = reconstruct_messages(linked)
    assert [m.content for m in rebuilt] == [m["content"] for m in history]
    assert len({e.metadata.harness_fingerprint for e in linked}) == 1

    (g,) = [v for (t, _), v in by_tenant.items() if t == "globex"]
    assert (
        g[0].step_index == 0
        and g[0].observation.prefix_message_count == 0
        and len(g[0].observation.messages) == 4
    )
    assert g[0].governance.consent.training is False and g[0].governance.data_class == "confidential"

    run7 = sorted(by_tenant[("acme", "acme~run-7")], key=lambda e: e.step_index)
    assert [e.step_index for e in run7] == [0, 1]
    assert run7[0].governance.consent.training is False and run7[0].governance.data_class == "restricted"
    # continuing from choice 1: the chosen reply is carried in the delta, so reconstruction is exact
    assert run7[1].observation.prefix_message_count == 1
    assert [m.content for m in run7[1].observation.messages] == ["Echo[1]: pick one", "more"]
    assert [m.content for m in reconstruct_messages(run7)][:3] == ["pick one", "Echo[1]: pick one", "more"]
