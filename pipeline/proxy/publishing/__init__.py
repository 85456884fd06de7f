"""Publishing step and reward events: an idempotent Kafka producer that spools to disk when it must."""
