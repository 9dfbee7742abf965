"""The implementation behind the public `sluice.distribution`
(see sluice/distribution/__init__.py)."""
