"""Async advisors; the sync twins are generated into ``_sync``."""
