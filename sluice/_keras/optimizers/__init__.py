"""The implementation behind the public `sluice.optimizers`; each public
name is declared on its definition with `@export`."""
