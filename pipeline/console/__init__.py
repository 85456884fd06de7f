"""The web console (``sluice ui``): trajectories, redactions, versions, live status, the learning curve."""
