"""Advisors that give a ChatClient memory."""

__all__: list[str] = []
