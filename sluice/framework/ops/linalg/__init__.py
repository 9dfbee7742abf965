"""Linear algebra on the innermost two dimensions: diagonals and bands, inverse, determinants,
solves and decompositions.
"""

from sluice.framework.ops.linalg import (  # noqa: F401  (imported for their registrations)
    linalg_ops,
    matrix_diag_ops,
    slogdet_ops,
)
