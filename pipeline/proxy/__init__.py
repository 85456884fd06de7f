"""Proxy: OpenAI/Anthropic-compatible endpoints that publish every LLM call as a step event.

    sluice proxy --config infra/sluice.yaml

``create_app(config)`` gives the ASGI app for in-process use (tests, embedding).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from pipeline.proxy.settings import ProxySettings


def create_app(config: ProxySettings) -> Starlette:
    from pipeline.proxy.app import create_app as _create_app

    return _create_app(config)


__all__ = ["create_app"]
