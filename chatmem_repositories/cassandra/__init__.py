"""The cassandra repository (being built)."""
