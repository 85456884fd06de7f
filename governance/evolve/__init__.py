"""The control plane's pure decisions: how an overlay edits a request, what a failure cluster calls for,
and when a gate or a canary passes. No broker, store or HTTP here."""
