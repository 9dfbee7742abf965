"""The implementation behind the public `sluice.summary`
(see sluice/summary/__init__.py)."""
