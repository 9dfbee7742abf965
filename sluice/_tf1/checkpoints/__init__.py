"""The implementation behind the public `sluice.checkpoints`; each public
name is declared on its definition with `@export`."""
