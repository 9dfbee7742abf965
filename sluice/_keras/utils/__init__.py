"""The implementation behind the public `sluice.utils`
(see sluice/utils/__init__.py)."""
