"""The implementation behind the public `sluice.losses`
(see sluice/losses/__init__.py)."""
