"""The implementation behind the public `sluice.training`; each public
name is declared on its definition with `@export`."""
