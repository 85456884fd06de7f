"""Pure policy logic: redaction, eligibility, reward joins, replay grading. Imports neither faust nor Kafka."""
