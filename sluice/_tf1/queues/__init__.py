"""The implementation behind the public `sluice.queues`
(see sluice/queues/__init__.py)."""
