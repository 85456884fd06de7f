"""Rollout backends: vLLM on GPU (optional extra), torch/transformers on CPU (always available)."""
