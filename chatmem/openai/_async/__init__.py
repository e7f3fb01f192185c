"""Async OpenAI chat model; the sync twin is generated into ``_sync``."""
