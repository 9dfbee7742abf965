"""The implementation behind the public `sluice.metrics`; each public
name is declared on its definition with `@export`."""
