"""Weight sync from the learner to the rollout workers after each update."""
