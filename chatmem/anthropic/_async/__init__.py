"""Async source of the Anthropic chat model; ``_sync`` holds its generated twin."""
