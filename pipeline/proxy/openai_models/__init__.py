"""OpenAI models: ``GET /v1/models``, the union of what the configured backends serve."""
