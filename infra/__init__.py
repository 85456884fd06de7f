"""Deployment material: the local broker launcher, compose/k8s/Ray files, and the sample config."""
