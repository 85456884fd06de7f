"""`sluice serve-model`: the CPU backend (the tiny model) as an OpenAI-compatible HTTP server."""
