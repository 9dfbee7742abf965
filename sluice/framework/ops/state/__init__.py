"""Ops on session state: variables, the stacks of backward loops, row buffers, TensorArray, and
`Variable.initialized_value()`.
"""

from sluice.framework.ops.state import (  # noqa: F401  (imported for their registrations)
    buffer_ops,
    initialized_value_ops,
    stack_ops,
    state_ops,
    tensor_array_ops,
)
