"""The implementation behind the public `sluice.datasets`
(see sluice/datasets/__init__.py)."""
