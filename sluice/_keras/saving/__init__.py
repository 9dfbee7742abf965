"""The implementation behind the public `sluice.saving`; each public
name is declared on its definition with `@export`."""
