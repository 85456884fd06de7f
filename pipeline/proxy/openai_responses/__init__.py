"""OpenAI ``POST /v1/responses``, translated to the backend's chat completions and back (stateless)."""
