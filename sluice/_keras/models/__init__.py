"""The implementation behind the public `sluice.models`; each public
name is declared on its definition with `@export`."""
