"""Trajectory API: the routes."""

from __future__ import annotations

from starlette.routing import Route

from pipeline.proxy.trajectories.reading import get_trajectory, list_trajectories
from pipeline.proxy.trajectories.serving import post_end, post_feedback, post_reward


def routes() -> list[Route]:
    base = "/v1/trajectories/{trajectory_id}"
    return [
        Route("/v1/trajectories", list_trajectories, methods=["GET"]),
        Route(base, get_trajectory, methods=["GET"]),
        Route(base + "/rewards", post_reward, methods=["POST"]),
        Route(base + "/feedback", post_feedback, methods=["POST"]),
        Route(base + "/end", post_end, methods=["POST"]),
    ]
