"""Anthropic ``POST /v1/messages``, translated to the backend's OpenAI chat completions and back."""
