"""Sparse tensors (`SparseTensor`, `sparse_placeholder`) and the ops on them: conversions and
moves of entries (`sparse_ops`), joins and filters (`sparse_join_ops`), elementwise arithmetic
and softmax (`sparse_math_ops`), a sparse and a dense operand at the sparse entries
(`sparse_cwise_ops`), dense results sized by the dense shape (`sparse_dense_ops`), new dense
shapes and merged ids (`sparse_shape_ops`), elementwise maximum and minimum
(`sparse_minmax_ops`), strings split into tokens (`string_split_ops`)."""

from sluice.framework.ops.sparse import (  # noqa: F401  (imported for their registrations)
    sparse_cwise_ops,
    sparse_dense_ops,
    sparse_join_ops,
    sparse_math_ops,
    sparse_minmax_ops,
    sparse_ops,
    sparse_shape_ops,
    sparse_tensor,
    string_split_ops,
)
