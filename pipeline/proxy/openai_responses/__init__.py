"""OpenAI responses: ``POST /v1/responses``, translated to chat and back, with in-memory chains.

The response chains answer ``previous_response_id``."""
