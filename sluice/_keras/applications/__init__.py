"""The implementation behind the public `sluice.applications`
(see sluice/applications/__init__.py)."""
