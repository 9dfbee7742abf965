"""The implementation behind the public `sluice.callbacks`
(see sluice/callbacks/__init__.py)."""
