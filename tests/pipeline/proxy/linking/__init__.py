"""Tests of the proxy's linking package."""
