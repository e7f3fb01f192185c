"""The redis repository (being built)."""
