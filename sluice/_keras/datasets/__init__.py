"""The implementation behind the public `sluice.datasets`; each public
name is declared on its definition with `@export`."""
