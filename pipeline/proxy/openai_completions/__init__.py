"""OpenAI ``POST /v1/completions`` (text completions): protocol, step, serving, router."""
