"""The implementation behind the public `sluice.image`; each public
name is declared on its definition with `@export`."""
