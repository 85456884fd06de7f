"""GRPO pieces: group-normalised advantages, staleness weights, batch packing, the clipped loss."""
