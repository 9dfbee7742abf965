"""The graph framework: IR, op registry, control flow, sessions and engines."""

# float64 and int64 without the process-wide jax_enable_x64: sluice enters JAX's scoped setting
# at its entry points, the user's JAX configuration stays theirs (see `ir.x64`).
from sluice.framework import ops  # noqa: F401  (registers every op)
