"""Public test helpers for sluice and for code built on it."""
