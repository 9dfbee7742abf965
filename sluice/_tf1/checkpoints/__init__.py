"""The implementation behind the public `sluice.checkpoints`
(see sluice/checkpoints/__init__.py)."""
