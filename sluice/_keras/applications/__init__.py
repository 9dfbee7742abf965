"""The implementation behind the public `sluice.applications`; each public
name is declared on its definition with `@export`."""
