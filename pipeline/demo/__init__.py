"""`sluice demo`: realistic agent traffic through the proxy, then a summary of what landed."""
