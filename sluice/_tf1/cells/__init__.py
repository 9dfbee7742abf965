"""The implementation behind the public `sluice.cells`
(see sluice/cells/__init__.py)."""
