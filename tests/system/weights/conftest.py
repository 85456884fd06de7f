"""One live stack for the weights tests, started once for this package: broker, tiny-model policy server
(the promoted version and the trainer's candidates at once), proxy, a stage worker, DuckDB sink, and
`sluice train` in live mode with ``trainer.promotion: gated`` as its own process.

Each test has tenants of its own, so they do not read each other's versions: acme and globex train their
own lines and initech none (the tenant policies test), hooli the pooled line (the weights-gated test).
Up to three canaries run at once (the pooled one and one per own line), so a candidate left in a scope
that gets no more traffic never holds the other scopes' canaries. The tenant policies test runs first
(file order): it reads initech as served by the servers' default, which a pooled version promoted by the
other test would change.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from app.config import SluiceConfig, load_config
from app.up import running_stack
from pipeline.evolve.ledger_state import ProposalState, proposal_states, read_ledger
from tests.system.conftest import live_trainer_config

POOLED = {"key": "sk-sluice-hooli", "tenant": "hooli"}  # the weights-gated test's tenant: the shared line


def gated_config(tmp: Path) -> Path:
    """``live_trainer_config`` with gated promotion, the control plane's gates and the tenants' scopes."""
    path = live_trainer_config(
        tmp,
        trainer={"promotion": "gated", "max_staleness": 8},
        live={"group_wait_s": 3, "default_scope": "own", "scopes": {"initech": "none", POOLED["tenant"]: "shared"}},
    )  # fmt: skip
    data = yaml.safe_load(path.read_text())
    # one policy server holds every line's versions: the tenants' promoted and candidate versions stay beside
    # the pooled line's candidates (at the default of 8, a push of the pooled line's next one is refused)
    data["trainer"]["serve"] = {**data["trainer"].get("serve", {}), "max_versions": 24}
    # the task's grader: the tiny model's answers are graded by the same regex whatever version gave them
    data["evolve"] = {
        "graders": {"*": {"kind": "traffic", "reward": {"kind": "regex", "pattern": "^$"}}},
        "eval": {"max_tokens": 4, "concurrency": 2},
        "shadow": {"max_prompts": 4, "min_prompts": 2},
        "offline": {"held_out": 2, "probe_samples": 1},
        "canary": {
            "share": 0.5,
            "weights_reward": "posted",
            "test": {"min_per_arm": 3, "tune_n": 6, "alpha": 0.2},
        },
        "limits": {"min_evidence": 2, "cooldown_after_rollback_s": 0, "max_canaries": 3},
    }
    keys = data["proxy"]["api_keys"]
    keys.append({**POOLED, "data_class": "internal", "consent_training": True})
    for k in keys:  # every tenant may train (initech's scope is none: it trains nothing all the same)
        k.update(consent_training=True, data_class="internal")
    data["eligibility"]["tenants"]["globex"] = {"training_opt_in": True, "retention_days": 7}
    data["eligibility"]["tenants"][POOLED["tenant"]] = {"training_opt_in": True, "retention_days": 7}
    path.write_text(yaml.safe_dump(data))
    return path


@dataclass
class LiveStack:
    cfg: SluiceConfig
    path: Path
    log: io.StringIO

    @property
    def proxy(self) -> str:
        return f"http://{self.cfg.proxy.host}:{self.cfg.proxy.port}"

    @property
    def model(self) -> str:
        """The policy server's root (``/v1/policy`` says what it serves and keeps)."""
        return self.cfg.trainer.policy_servers[0]

    def weights_states(self) -> dict[str, ProposalState]:
        """The weights proposals in the ledger by policy version, with what the gates decided of each."""
        return {
            s.proposal.policy_version: s
            for s in proposal_states(read_ledger(self.cfg.broker, self.cfg.topics, 15)).values()
            if s.proposal.surface == "weights" and s.proposal.policy_version
        }


@pytest.fixture(scope="package")
def live_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveStack]:
    tmp = tmp_path_factory.mktemp("weights-stack")
    path = gated_config(tmp)
    cfg = load_config(path)
    log = io.StringIO()
    with running_stack(cfg, path, with_trainer=True, log_path=tmp / "up.log", sink=log):
        yield LiveStack(cfg, path, log)
