"""The implementation behind the public `sluice.metrics`
(see sluice/metrics/__init__.py)."""
