"""OpenTelemetry export of audited trajectories: each trajectory a trace, each step a GenAI span."""
