"""String kernels of the general ops: NumPy on the host for string tensors.

TF registers a kernel per dtype as well as per device; sluice registers a second kernel for the
ops TF1 runs on strings (`registry.register_string_kernel`): the same contract as the op's JAX
kernel, on NumPy object arrays of bytes. The op's registration, inference rule and gradient
are the op's own (in its family's module); only the kernel differs. An op on strings without
one of these is refused when it is built, naming the op and the string input or output.

Every op here is one that TF1 registers for `tstring` on the CPU: identities, layout (reshape,
expand_dims, squeeze, transpose, tile, slice), joining (concat, stack, unstack), gather, fill and
zeros_like, select, shape queries, equality, and the variable ops (a string variable).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice.framework.ir import registry
from sluice.framework.ir.registry import register_string_kernel
from sluice.framework.ops.core.array_util import host_ints, one_or_tuple


def _strings(value: Any) -> np.ndarray:
    """`value` as an object array (kernels return object arrays whatever NumPy makes)."""
    array = np.asarray(value, dtype=object)
    return array


def _passed(x: Any, *_: Any, **__: Any) -> Any:
    return x


def _const(*, value: Any, **_: Any) -> Any:
    return value


def _never_run(**_: Any) -> Any:
    raise AssertionError("Placeholders are fed by the session, never run.")


def _reshape(x: Any, shape: Any, **_: Any) -> np.ndarray:
    return np.reshape(x, host_ints(shape, "Reshape's shape"))


def _expand_dims(x: Any, axis: Any, **_: Any) -> np.ndarray:
    (axis,) = host_ints(axis, "ExpandDims's axis")
    return np.expand_dims(x, axis)


def _squeeze(x: Any, *, squeeze_dims: Any, **_: Any) -> np.ndarray:
    return np.squeeze(x, axis=tuple(squeeze_dims) if squeeze_dims else None)


def _transpose(x: Any, perm: Any, **_: Any) -> np.ndarray:
    return np.transpose(x, host_ints(perm, "Transpose's perm"))


def _tile(x: Any, multiples: Any, **_: Any) -> np.ndarray:
    return _strings(np.tile(x, host_ints(multiples, "Tile's multiples")))


def _slice(x: Any, begin: Any, size: Any, **_: Any) -> np.ndarray:
    begin = host_ints(begin, "Slice's begin")
    size = host_ints(size, "Slice's size")
    index = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))
    return np.asarray(x)[index]


def _concat(*args: Any, **_: Any) -> np.ndarray:
    (axis,) = host_ints(args[-1], "ConcatV2's axis")
    return _strings(np.concatenate(args[:-1], axis=axis))


def _pack(*values: Any, axis: int, **_: Any) -> np.ndarray:
    return _strings(np.stack(values, axis=axis))


def _unpack(x: Any, *, num: int, axis: int, **_: Any) -> Any:
    moved = np.moveaxis(np.asarray(x), axis, 0)
    return one_or_tuple([moved[i] for i in range(num)])


def _split(axis: Any, x: Any, *, num_split: int, **_: Any) -> Any:
    (axis,) = host_ints(axis, "Split's axis")
    return one_or_tuple([_strings(p) for p in np.split(np.asarray(x), num_split, axis=axis)])


def _split_v(x: Any, size_splits: Any, axis: Any, **_: Any) -> Any:
    (axis,) = host_ints(axis, "SplitV's axis")
    x = np.asarray(x)
    sizes = list(host_ints(size_splits, "SplitV's size_splits"))
    if -1 in sizes:  # TF1: one size may be -1, the rest of the axis
        sizes[sizes.index(-1)] = x.shape[axis] - (sum(sizes) + 1)
    if sum(sizes) != x.shape[axis] or min(sizes, default=0) < 0:
        raise ValueError(f"SplitV: size_splits {sizes} do not add up to the axis' {x.shape[axis]}")
    return one_or_tuple([_strings(p) for p in np.split(x, np.cumsum(sizes)[:-1], axis=axis)])


def _gather(params: Any, indices: Any, axis: Any, *, batch_dims: int, **_: Any) -> np.ndarray:
    (axis,) = host_ints(axis, "GatherV2's axis")
    params, indices = np.asarray(params), np.asarray(indices)
    if batch_dims:
        raise ValueError("GatherV2 of strings with batch_dims is not supported")
    size = params.shape[axis % params.ndim]
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        bad = indices[(indices < 0) | (indices >= size)].flat[0]
        raise ValueError(f"GatherV2: indices contain {bad}, which is not in [0, {size})")
    return _strings(np.take(params, indices, axis=axis))


def _fill(dims: Any, value: Any, **_: Any) -> np.ndarray:
    out = np.empty(host_ints(dims, "Fill's dims"), dtype=object)
    out[...] = np.asarray(value).item()
    return out


def _zeros_like(x: Any, **_: Any) -> np.ndarray:
    out = np.empty(np.shape(x), dtype=object)
    out[...] = b""
    return out


def _select(cond: Any, x: Any, y: Any, **_: Any) -> np.ndarray:
    cond, x = np.asarray(cond), np.asarray(x)
    if cond.ndim == 1 and x.ndim > 1:  # selects whole rows
        cond = cond.reshape(cond.shape + (1,) * (x.ndim - 1))
    return _strings(np.where(cond, x, y))


def _equal(x: Any, y: Any, **_: Any) -> np.ndarray:
    return np.asarray(np.asarray(x, object) == np.asarray(y, object), dtype=bool)


def _not_equal(x: Any, y: Any, **_: Any) -> np.ndarray:
    return ~_equal(x, y)


for _op_type, _kernel in {
    "Const": _const,
    "Placeholder": _never_run,
    "PlaceholderWithDefault": _passed,
    "Identity": _passed,
    "StopGradient": _passed,
    "Reshape": _reshape,
    "ExpandDims": _expand_dims,
    "Squeeze": _squeeze,
    "Transpose": _transpose,
    "Tile": _tile,
    "Slice": _slice,
    "ConcatV2": _concat,
    "Pack": _pack,
    "Unpack": _unpack,
    "Split": _split,
    "SplitV": _split_v,
    "GatherV2": _gather,
    "Fill": _fill,
    "ZerosLike": _zeros_like,
    "Select": _select,
    "SelectV2": lambda cond, x, y, **_: _strings(np.where(cond, x, y)),
    "Equal": _equal,
    "NotEqual": _not_equal,
    "Shape": lambda x, *, out_type, **_: np.asarray(np.shape(x), dtype=out_type),
    "Size": lambda x, *, out_type, **_: np.asarray(np.size(x), dtype=out_type),
    "Rank": lambda x, **_: np.asarray(np.ndim(x), dtype=np.int32),
    # a string variable: its kernels do no arithmetic, so they hold object arrays as they are
    "ReadVariableOp": registry.get_op_def("ReadVariableOp").kernel,
    "AssignVariableOp": registry.get_op_def("AssignVariableOp").kernel,
}.items():
    register_string_kernel(_op_type, _kernel)
