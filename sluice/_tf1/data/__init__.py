"""The implementation behind the public `sluice.data`; each public
name is declared on its definition with `@export`."""
