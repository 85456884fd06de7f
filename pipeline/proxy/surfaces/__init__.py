"""Surfaces: what every API surface shares (request, caller, errors, serving paths, answers).

The per-surface packages beside this one (``openai_chat``, ``openai_completions``, ``openai_responses``,
``anthropic_messages``, ``openai_models``) hold each surface's protocol, serving and router.
"""
