"""Learners: the Ray actors that run asynchronous GRPO, and the rollout backends."""
