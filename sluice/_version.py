"""The version of sluice, where every module can read it (saved .keras files record it)."""

__version__ = "0.1.0"
