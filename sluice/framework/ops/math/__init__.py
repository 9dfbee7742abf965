"""Math ops: elementwise (unary, binary, trigonometric, special functions, divisions),
reductions, matmul, broadcasting gradients (`math_grad_util`), segment reductions and
`IndexedSlices`, einsum, sorting, numeric checks; and `array_grads`, the gradients of the
array ops that sum.
"""

from sluice.framework.ops.math import (  # noqa: F401  (imported for their registrations)
    array_grads,
    composite_reductions,
    debug_ops,
    division_ops,
    einsum_ops,
    float_ops,
    indexed_slices,
    math_grad_util,
    math_ops,
    matmul_ops,
    reduction_ops,
    segment_ops,
    sort_ops,
    sorted_segment_ops,
    special_math_ops,
    stitch_ops,
    trig_ops,
    unary_ops,
)
