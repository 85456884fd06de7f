"""Control: what the proxy reads back from the broker (erasures, overlay and policy assignments) and
how a request is routed by it."""
