"""The implementation behind the public `sluice.queues`; each public
name is declared on its definition with `@export`."""
