"""Control: what the proxy reads back from the broker (erasures, assignments) and routes requests by."""
