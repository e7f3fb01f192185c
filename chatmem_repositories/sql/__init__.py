"""The sql repository (being built)."""
