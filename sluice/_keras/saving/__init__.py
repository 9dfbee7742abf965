"""The implementation behind the public `sluice.saving`
(see sluice/saving/__init__.py)."""
