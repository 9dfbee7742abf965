"""The implementation behind the public `sluice.training`
(see sluice/training/__init__.py)."""
