"""Which proposers draft candidates (from config), and drafting for a list of clusters.

Every enabled proposer that handles a cluster's surface is asked in the configured order; each drafts at
most one proposal, and a draft whose overlay is the same as an earlier one for that cluster is dropped.
Weights and no-op clusters get no overlay: the trainer's next policy version answers the first.
"""

from __future__ import annotations

from pipeline.evolve.config import ProposersConfig
from pipeline.evolve.proposers.base import Proposer, ProposerContext
from pipeline.evolve.proposers.missing_fact import MissingFactProposer
from pipeline.evolve.proposers.model import ModelProposer
from pipeline.evolve.proposers.tool_format import ToolFormatProposer
from sluice.evolution import FailureCluster, Proposal


def build_proposers(cfg: ProposersConfig) -> list[Proposer]:
    out: list[Proposer] = []
    for name in cfg.enabled:
        if name == "tool_format":
            out.append(ToolFormatProposer())
        elif name == "missing_fact":
            out.append(MissingFactProposer())
        elif name == "model":
            assert cfg.model is not None  # the config's validator makes sure
            out.append(ModelProposer(cfg.model))
    return out


def draft_proposals(
    clusters: list[FailureCluster], context: ProposerContext, proposers: list[Proposer]
) -> list[Proposal]:
    out: list[Proposal] = []
    for cluster in clusters:
        seen: set[str] = set()
        if cluster.surface == "noop":
            continue
        asked = [p for p in proposers if cluster.surface in p.surfaces]
        if cluster.surface == "weights":
            context.notes.append(
                f"{cluster.cluster_id}: a weights cluster; the trainer's next policy version answers it"
            )
        elif not asked:
            context.notes.append(
                f"{cluster.cluster_id}: no enabled proposer drafts {cluster.surface} updates"
            )
        for proposer in asked:
            proposal = proposer.propose(cluster, context)
            if proposal is None:
                continue
            fp = proposal.candidate.content_fingerprint() if proposal.candidate else proposal.proposal_id
            if fp not in seen:
                seen.add(fp)
                out.append(proposal)
    return out
