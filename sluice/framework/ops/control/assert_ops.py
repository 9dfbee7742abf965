"""Assertions: the `Assert` op and TF1's `assert_*` helpers (`tf.debugging.assert_equal`, ...).

`Assert(condition, data)` is an op with no outputs: when it runs and `condition` is false, the
run fails with `InvalidArgumentError("assertion failed: [d0] [d1] ...")`, as TF's kernel says.
Put it in `control_dependencies` of the ops that must not run on bad values. The op's
`registry.Check` carries the condition, so both engines raise it (the compiled engine after the
jitted step, changing no variable).

Strings and constants in `data` are put into the message while the graph is built. The values
of the other data tensors reach the host only when the assertion fails: the check sends them
through a JAX host callback into a small table and returns their entry's number as its
`detail`, which the message then looks up (a `Check` carries one int64 from the jitted step).
The helpers follow TF1: when both sides are known statically, a failing assertion raises at
graph construction, and `assert_rank` with a known rank is checked then and returns a `NoOp`.
"""

from __future__ import annotations

import collections
import itertools
import threading
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback

from sluice._export import export
from sluice.framework.ir import dtypes, errors
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation
from sluice.framework.ir.registry import Check, not_differentiable, register_op
from sluice.framework.ops.array.fill_ops import rank as rank_op
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor, no_op
from sluice.framework.ops.core.shape_rules import constant_value
from sluice.framework.ops.math import math_ops, reduction_ops

_DEFAULT_SUMMARIZE = 3  # TF1 `tf.Assert` shows the first 3 entries of each data tensor


# -- Assert -------------------------------------------------------------------------------------
def _assert_infer(op) -> list:
    condition = op.inputs[0]
    if condition.dtype != dtypes.bool_ or condition.shape.rank not in (None, 0):
        raise ValueError(
            f"Assert {op.name!r}: the condition must be a scalar bool Tensor, got "
            f"{condition.dtype.name} with shape {condition.shape}."
        )
    return []


class _FailedData:
    """The data values of failed assertions, by entry number (0 means none was recorded).

    Bounded: entries of checks that failed on an untaken branch are never read, so the oldest
    go; a message whose entry went shows the tensors' names instead of their values.
    """

    _KEEP = 256

    def __init__(self):
        self._entries: collections.OrderedDict[int, tuple] = collections.OrderedDict()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def add(self, *values: Any) -> np.ndarray:
        with self._lock:
            number = next(self._numbers)
            self._entries[number] = tuple(np.asarray(v) for v in values)
            while len(self._entries) > self._KEEP:
                self._entries.popitem(last=False)
        return np.asarray(number, np.int64)

    def pop(self, number: int) -> tuple | None:
        with self._lock:
            return self._entries.pop(number, None)


_FAILED_DATA = _FailedData()


def _condition_false(condition, *data, text, summarize):
    """(condition is false, the failed data's entry in `_FAILED_DATA` or 0)."""
    failed = jnp.logical_not(condition)
    if not data:
        return failed, jnp.int64(0)
    entry = jax.ShapeDtypeStruct((), jnp.int64)
    record = lambda: io_callback(_FAILED_DATA.add, entry, *data)  # noqa: E731
    return failed, jax.lax.cond(failed, record, lambda: jnp.int64(0))


def _assertion_message(op: Operation, detail: int) -> str:
    """TF's "assertion failed: [d0] [d1] ..."; None in `text` stands for the next input."""
    values = _FAILED_DATA.pop(detail) if detail else None
    dynamic = iter(range(len(op.inputs) - 1))
    items = []
    for item in op.get_attr("text"):
        if item is None:
            i = next(dynamic)
            item = (
                f"<value of {op.inputs[1 + i].name}>"
                if values is None
                else summarize_value(values[i], op.get_attr("summarize"))
            )
        items.append(f"[{item}]")
    return "assertion failed: " + " ".join(items)


register_op(
    "Assert",
    infer=_assert_infer,
    kernel=lambda *inputs, **attrs: (),  # a stateful kernel's first input is its KernelContext
    stateful=True,  # never pruned as dead or merged with an equal assertion
    check=Check(_condition_false, _assertion_message),
)
not_differentiable("Assert")


def summarize_value(value: Any, summarize: int) -> str:
    """TF's text for a data value: the first `summarize` entries, "..." when there are more.

    >>> summarize_value(np.array([1, 2, 3, 4]), 3)
    '1 2 3...'
    >>> summarize_value(np.array([[1.5, 2.0], [3.0, 4.0]]), 10)
    '[1.5 2][3 4]'
    """
    value = np.asarray(value)
    if value.dtype.kind == "b":  # TF shows bools as 1 and 0
        value = value.astype(np.int8)
    if value.dtype.kind in "SUO":
        flat = [v.decode() if isinstance(v, bytes) else str(v) for v in value.reshape(-1)]
    else:
        flat = [f"{v:g}" if value.dtype.kind == "f" else str(v) for v in value.reshape(-1)]
    if value.ndim == 0:
        return flat[0]
    limit = len(flat) if summarize < 0 else summarize
    shown, more = flat[:limit], len(flat) > limit
    if value.ndim == 1:
        return " ".join(shown) + ("..." if more else "")
    rows, row_len = [], value.shape[-1]
    for start in range(0, len(shown), row_len):
        rows.append("[" + " ".join(shown[start : start + row_len]) + "]")
    return "".join(rows) + ("..." if more else "")


def _data_text(item: Any, summarize: int) -> tuple[Any, str | None]:
    """(the Tensor whose run-time value the message shows, or None; the item's text, or None
    for that value)."""
    if isinstance(item, (str, bytes)):
        return None, item.decode() if isinstance(item, bytes) else item
    tensor = convert_to_tensor(item)
    static = constant_value(tensor)
    if static is not None:
        return None, summarize_value(static, summarize)
    return tensor, None


@export("Assert", "debugging.Assert")
def Assert(  # noqa: N802 (TF1's name)
    condition: Any,
    data: Sequence[Any],
    summarize: int | None = None,
    name: str | None = None,
) -> Operation:
    """An op that fails the run when `condition` is false (TF1 `tf.Assert`).

    Args:
      condition: a scalar bool Tensor (or Python bool).
      data: Tensors and strings to show in the message when the assertion fails.
      summarize: how many entries of each data tensor to show (3 if None; -1 for all).
      name: a name for the operation.

    Returns:
      The Assert Operation; make other ops depend on it with `sl.control_dependencies`.

    Raises:
      InvalidArgumentError: when run with a false condition: "assertion failed: [d0] [d1] ...".

    >>> x = sl.placeholder(sl.float32, [])
    >>> check = sl.Assert(x > 0.0, ["x must be > 0, got", x])
    >>> with sl.control_dependencies([check]):
    ...     y = sl.sqrt(x)
    >>> sl.Session().run(y, {x: -4.0})
    Traceback (most recent call last):
    ...
    sluice.framework.ir.errors.InvalidArgumentError: assertion failed: [x must be > 0, got] [-4]
         [[node Assert/Assert (op Assert)]]
    """
    summarize = _DEFAULT_SUMMARIZE if summarize is None else int(summarize)
    with graph_lib.name_scope(name, "Assert"):
        condition = convert_to_tensor(condition, dtype=dtypes.bool_, name="condition")
        tensors, text = [], []
        for item in data:
            tensor, item_text = _data_text(item, summarize)
            text.append(item_text)
            if tensor is not None:
                tensors.append(tensor)
        return apply_op(
            "Assert",
            [condition, *tensors],
            {"text": tuple(text), "summarize": summarize},
            name="Assert",
        )


# -- assert_* helpers ---------------------------------------------------------------------------
def _static_failure(data: list) -> None:
    """Raises at graph construction, as TF1's `_assert_static`, with the data's known values."""
    lines = []
    for item in data:
        if isinstance(item, (str, bytes)):
            lines.append(item.decode() if isinstance(item, bytes) else item)
        else:
            value = constant_value(convert_to_tensor(item))
            lines.append(str(item) if value is None else str(value))
    raise errors.InvalidArgumentError(None, None, "\n".join(lines))


def _binary_assert(
    compare: Callable[[Any, Any], Any],
    numpy_compare: Callable[[Any, Any], Any],
    symbol: str,
    default_name: str,
    x: Any,
    y: Any,
    data: Sequence[Any] | None,
    summarize: int | None,
    message: str | None,
    name: str | None,
) -> Operation:
    """`Assert(reduce_all(compare(x, y)))` with TF1's default data and static check."""
    with graph_lib.name_scope(name or default_name):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype=x.dtype, name="y")
        if data is None:
            data = [
                message or "",
                f"Condition x {symbol} y did not hold element-wise:",
                f"x ({x.name}) = ",
                x,
                f"y ({y.name}) = ",
                y,
            ]
        x_static, y_static = constant_value(x), constant_value(y)
        if x_static is not None and y_static is not None:
            if not np.all(numpy_compare(x_static, y_static)):
                _static_failure(list(data))
        condition = reduction_ops.reduce_all(compare(x, y))
        return Assert(condition, list(data), summarize=summarize)


@export("assert_equal", "debugging.assert_equal")
def assert_equal(x: Any, y: Any, data=None, summarize=None, message=None, name=None) -> Operation:
    """Asserts `x == y` element-wise (TF1 `tf.assert_equal`); see `Assert`.

    >>> sl.assert_equal(sl.constant([1, 2]), sl.constant([1, 3]))  # known now: fails now
    Traceback (most recent call last):
    ...
    sluice.framework.ir.errors.InvalidArgumentError: ...Condition x == y did not hold...
    """
    return _binary_assert(
        math_ops.equal, np.equal, "==", "assert_equal", x, y, data, summarize, message, name
    )


@export("assert_less", "debugging.assert_less")
def assert_less(x: Any, y: Any, data=None, summarize=None, message=None, name=None) -> Operation:
    """Asserts `x < y` element-wise (TF1 `tf.assert_less`); see `Assert`."""
    return _binary_assert(
        math_ops.less, np.less, "<", "assert_less", x, y, data, summarize, message, name
    )


@export("assert_less_equal", "debugging.assert_less_equal")
def assert_less_equal(
    x: Any, y: Any, data=None, summarize=None, message=None, name=None
) -> Operation:
    """Asserts `x <= y` element-wise (TF1 `tf.assert_less_equal`); see `Assert`."""
    return _binary_assert(
        math_ops.less_equal,
        np.less_equal,
        "<=",
        "assert_less_equal",
        x,
        y,
        data,
        summarize,
        message,
        name,
    )


@export("assert_greater", "debugging.assert_greater")
def assert_greater(x: Any, y: Any, data=None, summarize=None, message=None, name=None) -> Operation:
    """Asserts `x > y` element-wise (TF1 `tf.assert_greater`); see `Assert`."""
    return _binary_assert(
        math_ops.greater, np.greater, ">", "assert_greater", x, y, data, summarize, message, name
    )


@export("assert_greater_equal", "debugging.assert_greater_equal")
def assert_greater_equal(
    x: Any, y: Any, data=None, summarize=None, message=None, name=None
) -> Operation:
    """Asserts `x >= y` element-wise (TF1 `tf.assert_greater_equal`); see `Assert`."""
    return _binary_assert(
        math_ops.greater_equal,
        np.greater_equal,
        ">=",
        "assert_greater_equal",
        x,
        y,
        data,
        summarize,
        message,
        name,
    )


def _sign_assert(
    helper, symbol: str, zero_first: bool, default_name: str, x, data, summarize, message, name
) -> Operation:
    """`x > 0` and friends, as TF1: a comparison with a zero of x's dtype."""
    with graph_lib.name_scope(name or default_name):
        x = convert_to_tensor(x, name="x")
        if data is None:
            data = [
                message or "",
                f"Condition x {symbol} 0 did not hold element-wise:",
                f"x ({x.name}) = ",
                x,
            ]
        zero = convert_to_tensor(0, dtype=x.dtype, name="zero")
        left, right = (zero, x) if zero_first else (x, zero)
        return helper(left, right, data=data, summarize=summarize)


@export("assert_positive", "debugging.assert_positive")
def assert_positive(x: Any, data=None, summarize=None, message=None, name=None) -> Operation:
    """Asserts `x > 0` element-wise (TF1 `tf.assert_positive`); see `Assert`.

    >>> x = sl.placeholder(sl.float32, [2])
    >>> with sl.control_dependencies([sl.assert_positive(x, message="x")]):
    ...     y = sl.log(x)
    >>> sl.Session().run(y, {x: [1.0, 0.0]})
    Traceback (most recent call last):
    ...
    sluice.framework.ir.errors.InvalidArgumentError: assertion failed: [x] [Condition x > 0 ...
    """
    return _sign_assert(
        assert_less, ">", True, "assert_positive", x, data, summarize, message, name
    )


@export("assert_negative", "debugging.assert_negative")
def assert_negative(x: Any, data=None, summarize=None, message=None, name=None) -> Operation:
    """Asserts `x < 0` element-wise (TF1 `tf.assert_negative`); see `Assert`."""
    return _sign_assert(
        assert_less, "<", False, "assert_negative", x, data, summarize, message, name
    )


@export("assert_non_negative", "debugging.assert_non_negative")
def assert_non_negative(x: Any, data=None, summarize=None, message=None, name=None) -> Operation:
    """Asserts `x >= 0` element-wise (TF1 `tf.assert_non_negative`); see `Assert`."""
    return _sign_assert(
        assert_less_equal, ">=", True, "assert_non_negative", x, data, summarize, message, name
    )


@export("assert_non_positive", "debugging.assert_non_positive")
def assert_non_positive(x: Any, data=None, summarize=None, message=None, name=None) -> Operation:
    """Asserts `x <= 0` element-wise (TF1 `tf.assert_non_positive`); see `Assert`."""
    return _sign_assert(
        assert_less_equal, "<=", False, "assert_non_positive", x, data, summarize, message, name
    )


@export("assert_rank", "debugging.assert_rank")
def assert_rank(x: Any, rank: Any, data=None, summarize=None, message=None, name=None) -> Operation:
    """Asserts that `x` has rank `rank` (TF1 `tf.assert_rank`).

    When both ranks are known while the graph is built (the usual case), the check happens
    now: a mismatch raises ValueError and a match returns a NoOp; otherwise an `Assert` checks
    it at run time.

    >>> sl.assert_rank(sl.zeros([2, 3]), 1)
    Traceback (most recent call last):
    ...
    ValueError: Tensor zeros:0 must have rank 1.  Received rank 2, shape (2, 3)
    """
    with graph_lib.name_scope(name, "assert_rank"):
        x = convert_to_tensor(x, name="x")
        rank_tensor = convert_to_tensor(rank, dtype=dtypes.int32, name="rank")
        wanted = constant_value(rank_tensor)
        if wanted is not None and np.ndim(wanted) != 0:
            raise ValueError(f"assert_rank: rank must be a scalar, got shape {np.shape(wanted)}.")
        if wanted is not None and x.shape.rank is not None:
            if x.shape.rank != int(wanted):
                raise ValueError(
                    f"{message + '.  ' if message else ''}Tensor {x.name} must have rank "
                    f"{int(wanted)}.  Received rank {x.shape.rank}, shape {x.shape}"
                )
            return no_op()
        if data is None:
            data = [
                message or "",
                f"Tensor {x.name} must have rank",
                rank_tensor,
                "Received shape: ",
                x,
            ]
        condition = math_ops.equal(rank_op(x), rank_tensor)
        return Assert(condition, list(data), summarize=summarize)


__all__ = [
    "Assert",
    "assert_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_less",
    "assert_less_equal",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_positive",
    "assert_rank",
    "summarize_value",
]
