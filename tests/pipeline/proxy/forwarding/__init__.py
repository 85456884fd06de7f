"""Tests of the proxy's forwarding package."""
