"""The implementation behind the public `sluice.losses`; each public
name is declared on its definition with `@export`."""
