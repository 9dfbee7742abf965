"""Splitting strings into a SparseTensor: StringSplit (`tf.string_split`) and StringSplitV2
(`tf.strings.split` of TF1, whose result is a SparseTensor).

Entry `[i, j]` of the result is the j-th token of `source[i]`; the dense shape is
`[len(source), most tokens]`. Like the other string ops they run on the host with NumPy
(`ops.host.string_ops`); how many entries come out depends on the data.

    >>> import sluice as sl
    >>> with sl.Graph().as_default(), sl.Session() as sess:
    ...     sess.run(sl.string_split(["a b", "c"])).values.tolist()
    [b'a', b'b', b'c']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir.registry import not_differentiable, register_op, register_string_kernel
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.sparse.sparse_tensor import SparseTensor


def _split_infer(op) -> list:
    source, sep = op.inputs
    for what, t, rank in (("input", source, 1), ("delimiter", sep, 0)):
        if t.dtype != dtypes.string or t.shape.rank not in (None, rank):
            raise TypeError(
                f"{what} must be a rank-{rank} string tensor, got {t.dtype.name}{t.shape}"
            )
    return [
        (dtypes.int64, TensorShape([None, 2])),
        (dtypes.string, TensorShape([None])),
        (dtypes.int64, TensorShape([2])),
    ]


def _sparse_parts(rows: list[list[bytes]]) -> tuple:
    indices = [(i, j) for i, tokens in enumerate(rows) for j in range(len(tokens))]
    values = np.empty(len(indices), dtype=object)
    values[:] = [token for tokens in rows for token in tokens]
    width = max((len(tokens) for tokens in rows), default=0)
    return (
        np.asarray(indices, np.int64).reshape(-1, 2),
        values,
        np.asarray([len(rows), width], np.int64),
    )


def _string_split_kernel(source: Any, delimiter: Any, *, skip_empty: bool = True, **_: Any):
    """TF's StringSplit: every byte of `delimiter` splits; an empty one splits into bytes."""
    sep = np.asarray(delimiter).item()
    rows = []
    for text in np.asarray(source, dtype=object).reshape(-1):
        if not sep:
            tokens = [text[i : i + 1] for i in range(len(text))]
        else:
            tokens = [text]
            for byte in sep:
                tokens = [piece for t in tokens for piece in t.split(bytes([byte]))]
        rows.append([t for t in tokens if t] if skip_empty else tokens)
    return _sparse_parts(rows)


def _string_split_v2_kernel(source: Any, sep: Any, *, maxsplit: int = -1, **_: Any):
    """TF's StringSplitV2: Python's `bytes.split` (runs of whitespace for an empty `sep`)."""
    sep = np.asarray(sep).item() or None
    texts = np.asarray(source, dtype=object).reshape(-1)
    return _sparse_parts([text.split(sep, maxsplit) for text in texts])


for _name, _kernel in (
    ("StringSplit", _string_split_kernel),
    ("StringSplitV2", _string_split_v2_kernel),
):
    register_op(_name, infer=_split_infer, kernel=_kernel, jit=False)
    register_string_kernel(_name, _kernel)
    not_differentiable(_name)


def _sparse_result(op_type: str, source: Any, sep: Any, attrs: dict, name: Any) -> SparseTensor:
    source = core_ops.convert_to_tensor(source, dtype=dtypes.string)
    if source.shape.rank not in (None, 1):
        raise ValueError(f"{op_type}: source must be a vector of strings, got shape {source.shape}")
    sep = core_ops.convert_to_tensor(sep, dtype=dtypes.string)
    op = core_ops.apply_op(op_type, [source, sep], attrs, name=name)
    return SparseTensor(*op.outputs)


@export("string_split")
def string_split(
    source: Any, delimiter: Any = " ", skip_empty: bool = True, name: str | None = None
) -> SparseTensor:
    """Splits each string of the vector `source` at every byte of `delimiter` (into bytes when
    it is empty), as TF1's `tf.string_split`: a SparseTensor of the tokens, empty ones left out
    with `skip_empty`."""
    return _sparse_result("StringSplit", source, delimiter, {"skip_empty": bool(skip_empty)}, name)


@export("strings.split")
def strings_split(
    input: Any = None,
    sep: Any = None,
    maxsplit: int = -1,
    result_type: str = "SparseTensor",
    source: Any = None,
    name: str | None = None,
) -> SparseTensor:
    """Splits each string of the vector `input` at `sep` as Python's `str.split` does (at runs
    of whitespace when `sep` is None), at most `maxsplit` times: TF1's `tf.strings.split`, whose
    result is a SparseTensor (sluice has no RaggedTensor).

    Raises:
      ValueError: `result_type` is not "SparseTensor", or both `input` and `source` are given.
    """
    if input is not None and source is not None:
        raise ValueError("strings.split: give input or source, not both.")
    if result_type != "SparseTensor":
        raise ValueError(
            f"strings.split: result_type {result_type!r} is not supported; sluice has no "
            "RaggedTensor, so the result is a SparseTensor (result_type='SparseTensor')."
        )
    text = input if input is not None else source
    return _sparse_result("StringSplitV2", text, sep or "", {"maxsplit": int(maxsplit)}, name)
