"""The implementation behind the public `sluice.contrib`
(see sluice/contrib/__init__.py)."""
