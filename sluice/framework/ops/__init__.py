"""Op registrations grouped by concern; importing this package registers every op."""

from sluice.framework.ops import (  # noqa: F401  (imported for their registrations)
    array_ops,
    broadcast_ops,
    buffer_ops,
    control_flow_ops,
    conv_ops,
    core_ops,
    debug_ops,
    fill_ops,
    gather_ops,
    join_ops,
    loss_ops,
    math_ops,
    nn_ops,
    pool_ops,
    random_ops,
    slicing_ops,
    stack_ops,
    state_ops,
)

# The CPU and host kernels specialise ops registered above, so they are imported after them.
# isort: split
from sluice.framework.ops import cpu_kernels, host_kernels  # noqa: F401  (registrations)
