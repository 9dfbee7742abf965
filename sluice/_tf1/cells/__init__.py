"""The implementation behind the public `sluice.cells`; each public
name is declared on its definition with `@export`."""
