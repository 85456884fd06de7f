"""The model servers' weight API as every component names it: the paths a trainer pushes to, the control
plane promotes and discards on, and an erasure rolls back through (``trainers.serving`` serves them)."""

POLICY_PATH = "/v1/policy"  # GET: the default version, every version held, their roles and the history
WEIGHTS_PATH = "/v1/policy/weights"  # POST: a new version (served at once, or a candidate)
ROLLBACK_PATH = "/v1/policy/rollback"  # POST {"version"}: a kept version becomes the default again
PROMOTE_PATH = "/v1/policy/promote"  # POST {"version"}: a kept version (a candidate) becomes the default
DISCARD_PATH = "/v1/policy/discard"  # POST {"version"}: the version leaves memory; its name stays used
