"""Applying an optax step to some rows of a variable: TF1's sparse updates (`_apply_sparse`).

An `IndexedSlices` gradient (values, indices) of a [rows, ...] variable updates only the rows it
names, and only those rows of the variable's state (momentum, accumulators), as TF1's
`sparse_apply_*` kernels do:

    unique, inverse = unique(indices)              # repeated indices add up (TF1 deduplicates)
    grad_rows = segment_sum(values, inverse)
    new_rows, new_state_rows = optax step on (grad_rows, var[unique], state[unique])
    var[unique], state[unique] = new_rows, new_state_rows

The other rows keep their values: no decay of their momentum, no step. With the learning rate,
clipping and the transformation being the optimizer's own optax ones, no update maths is written
here. Shapes stay static for jit: `unique` has one entry per index, padded with an index past the
last row, whose (meaningless) update is dropped when the rows are written back.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp


def rows_of(indices: Any, values: Any, rows: int) -> tuple[Any, Any]:
    """(unique row indices padded with `rows`, the values summed per unique index)."""
    indices = jnp.reshape(indices, [-1])
    indices = jnp.where((indices < 0) | (indices >= rows), rows, indices)  # never written
    n = indices.shape[0]
    unique, inverse = jnp.unique(indices, size=n, fill_value=rows, return_inverse=True)
    summed = jnp.zeros((n,) + values.shape[1:], values.dtype)
    return unique, summed.at[jnp.reshape(inverse, [-1])].add(values)


def take_rows(full: Any, unique: Any) -> Any:
    """full[unique], zeros for the padding index."""
    return full.at[unique].get(mode="fill", fill_value=0)


def put_rows(full: Any, unique: Any, rows: Any) -> Any:
    """full with full[unique] = rows; the padding index is dropped."""
    return full.at[unique].set(rows.astype(full.dtype), mode="drop")
