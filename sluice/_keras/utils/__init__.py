"""The implementation behind the public `sluice.utils`; each public
name is declared on its definition with `@export`."""
