"""The mongodb repository (being built)."""
