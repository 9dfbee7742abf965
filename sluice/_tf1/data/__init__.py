"""The implementation behind the public `sluice.data`
(see sluice/data/__init__.py)."""
