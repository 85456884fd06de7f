"""Tests of the proxy's control package."""
