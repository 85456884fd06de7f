"""Anthropic messages: ``POST /v1/messages``, translated to the backend's chat completions and back."""
