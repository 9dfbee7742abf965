"""The implementation behind the public `sluice.optimizers`
(see sluice/optimizers/__init__.py)."""
