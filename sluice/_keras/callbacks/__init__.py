"""The implementation behind the public `sluice.callbacks`; each public
name is declared on its definition with `@export`."""
