"""The implementation behind the public `sluice.layers`; each public
name is declared on its definition with `@export`."""
