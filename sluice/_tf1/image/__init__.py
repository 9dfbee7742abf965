"""The implementation behind the public `sluice.image`
(see sluice/image/__init__.py)."""
