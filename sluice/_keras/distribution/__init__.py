"""The implementation behind the public `sluice.distribution`; each public
name is declared on its definition with `@export`."""
