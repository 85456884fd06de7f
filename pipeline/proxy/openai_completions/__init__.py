"""OpenAI completions: ``POST /v1/completions``, text completions (protocol, call, serving, router)."""
