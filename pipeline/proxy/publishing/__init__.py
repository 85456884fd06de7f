"""Publishing: step and reward events to Kafka, behind a write-ahead log on local disk."""
