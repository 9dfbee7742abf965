"""The implementation behind the public `sluice.models`
(see sluice/models/__init__.py)."""
