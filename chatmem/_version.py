"""The installed version of chatmem."""

__version__ = "0.1.0"
