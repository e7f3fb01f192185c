"""The neo4j repository (being built)."""
