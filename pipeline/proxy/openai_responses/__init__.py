"""OpenAI ``POST /v1/responses``, translated to the backend's chat completions and back; response chains
in memory answer ``previous_response_id``."""
