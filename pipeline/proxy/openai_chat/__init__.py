"""OpenAI chat: ``POST /v1/chat/completions`` (protocol, serving, router)."""
