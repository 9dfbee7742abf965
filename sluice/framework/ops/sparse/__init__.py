"""Sparse tensors (`SparseTensor`, `sparse_placeholder`) and the ops on them: conversions and
moves of entries (`sparse_ops`), arithmetic (`sparse_math_ops`)."""

from sluice.framework.ops.sparse import (  # noqa: F401  (imported for their registrations)
    sparse_math_ops,
    sparse_ops,
    sparse_tensor,
)
