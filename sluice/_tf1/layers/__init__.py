"""The implementation behind the public `sluice.layers`
(see sluice/layers/__init__.py)."""
