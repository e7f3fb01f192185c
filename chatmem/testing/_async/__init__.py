"""Async test helpers; ``chatmem.testing._sync`` is generated from these."""
