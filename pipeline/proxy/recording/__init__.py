"""Recording: the step a model call records, from ``begin`` to the event handed to the publisher."""
