"""The implementation behind the public `sluice.contrib`; each public
name is declared on its definition with `@export`."""
