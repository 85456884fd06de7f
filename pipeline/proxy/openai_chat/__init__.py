"""OpenAI ``POST /v1/chat/completions``: protocol, serving, stream assembly, router."""
