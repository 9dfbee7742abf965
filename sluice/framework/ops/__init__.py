"""The op registrations, in folders by family; importing this package registers every op.

Each op's registration, shape rule, kernel and gradient sit side by side in one module of its
family. The families, lowest first; a module imports only its own family and lower ones (the order
`tests/test_import_direction.py` checks), so the package has no import circle:

    core       Const, Placeholder, Identity, NoOp; `apply_op`, `convert_to_tensor`; the shared
               helpers of every family: shape rules, int-array helpers, math dtype rules
    array      shapes, casts and fills, layout (Reshape, Transpose, ...), tile and broadcast,
               stack/concat/split/pad, slicing, gather/where, scatter_nd, unique, ...
    math       elementwise and reduction ops, matmul, segment sums, IndexedSlices, einsum, sort,
               numeric checks; `array_grads`: the gradients of the array ops that sum
    linalg     matrix inverse, solves, decompositions, diagonals and bands
    random     random draws, seeds, candidate samplers
    nn         activations, softmax, losses (CTC too), convolution, pooling, LRN, image resizing,
               sequence ops; their CPU kernels
    control    the whitepaper's control-flow primitives (Switch, Merge, ...), Assert
    state      variables, stacks for backward loops, row buffers, TensorArray
    host       ops the host runs: print, py_func, host callbacks and kernels, queues,
               iterators, summaries
    composite  TF1 functions that only compose the ops above (clip_by_norm, moments, batch
               normalization, conv1d, norm, sampled losses): no registrations of their own
    sparse     SparseTensor, sparse_placeholder and the sparse ops (to_dense, reorder, reshape,
               concat, add, reduce_sum, sparse-dense matmul, softmax, fill_empty_rows)

Where a gradient of a low family needs ops of a higher one (the array ops whose gradients sum
with a reduction), it is registered after all of them exist, in `math/array_grads.py`, as TF1
keeps `array_grad.py` and JAX fills `ad.primitive_jvps` after defining its primitives. TF1
functions that compose ops of their own family stay beside them (`boolean_mask` in array_ops,
`tensordot` in einsum_ops); those that compose several families live in `composite/`.
"""

# The families in order, lowest first (see above).
# isort: off
from sluice.framework.ops import core  # noqa: F401  (registrations, in family order)
from sluice.framework.ops import array  # noqa: F401
from sluice.framework.ops import math  # noqa: F401
from sluice.framework.ops import linalg  # noqa: F401
from sluice.framework.ops import random  # noqa: F401
from sluice.framework.ops import nn  # noqa: F401
from sluice.framework.ops import control  # noqa: F401
from sluice.framework.ops import state  # noqa: F401
from sluice.framework.ops import host  # noqa: F401
from sluice.framework.ops import composite  # noqa: F401
from sluice.framework.ops import sparse  # noqa: F401
# isort: on
