"""Printing ops: `Print` (TF1's `tf.Print`, an identity that prints) and `PrintV2` (`tf.print`).

Both write from the host when they run, in both engines the same text: the interpreted engine
calls Python when it runs the op, the compiled engine through an ordered `jax.debug.callback`
inside its jitted step (only where the op is live: an untaken branch prints nothing).

Text, as TF1's kernels format it:
  Print    `message` then `[values]` for each data tensor, no separator, to stderr; each
           tensor shows its first `summarize` entries (default 3) in TF1's nesting,
           `[1 2 3]...` for a longer one (`summarize_v1`).
  print    the inputs joined by `sep` and followed by `end`; a Python string is printed as it
           is, a structure as `pprint` shows it; a tensor shows its first and last `summarize`
           entries of every dimension, `[0 1 2 ... 7 8 9]` (`summarize_v2`).
"""

from __future__ import annotations

import functools
import logging
import pprint
import sys
import threading
import weakref
from typing import Any, Sequence

import jax
import numpy as np

from sluice._export import export
from sluice.framework.ir import errors
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ir.registry import (
    Check,
    not_differentiable,
    register_gradient,
    register_op,
)
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.host.host_callback import (
    call_on_host,
    callback_failed,
    new_token,
    raise_recorded,
    record_failure,
    tracing,
)

_DEFAULT_SUMMARIZE = 3


# -- TF1's text of a value ----------------------------------------------------------------------
def _element_text(v: Any) -> str:
    """One element as TF prints it: the shortest of 6 (float) or 15 (double) significant digits
    that reads back exactly, else 9 or 17; bools as 1 and 0; complex as (re,im)."""
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, np.complexfloating):
        return f"({_element_text(v.real)},{_element_text(v.imag)})"
    if isinstance(v, np.floating):
        double = v.dtype == np.float64
        as_float = float(v)
        if np.isnan(as_float):
            return "nan"
        if np.isinf(as_float):
            return "inf" if as_float > 0 else "-inf"
        short, exact = (15, 17) if double else (6, 9)
        text = f"{as_float:.{short}g}"
        same = float(text) == as_float if double else np.float32(text) == np.float32(as_float)
        return text if same else f"{as_float:.{exact}g}"
    if isinstance(v, bytes):
        return v.decode(errors="backslashreplace")
    return str(v)


def _limit(size: int, summarize: int) -> int:
    return size if summarize < 0 else min(summarize, size)


def summarize_v1(value: Any, summarize: int = _DEFAULT_SUMMARIZE) -> str:
    """A value as `tf.Print` shows it: its first `summarize` entries (all when negative) in row
    order, each row in brackets, "..." where entries were left out.

    >>> summarize_v1(np.array([1, 2, 3, 4]))
    '1 2 3...'
    >>> summarize_v1(np.array([[1.5, 2.0], [3.0, 4.0]]), 3)
    '[1.5 2][3...]...'
    >>> summarize_v1(np.arange(8).reshape(2, 2, 2), -1)
    '[[0 1][2 3]][[4 5][6 7]]'
    """
    array = np.asarray(value)
    flat = array.reshape(-1)
    limit = _limit(flat.size, summarize)
    if array.ndim == 0:
        text = _element_text(flat[0]) if limit else ""
        return text + ("..." if flat.size > limit else "")
    out: list[str] = []
    index = 0

    def dim(d: int) -> None:
        nonlocal index
        if index >= limit:
            return
        count = array.shape[d]
        if d == array.ndim - 1:
            for i in range(count):
                if index >= limit:
                    if d != 0:
                        out.append("...")
                    return
                if i > 0:
                    out.append(" ")
                out.append(_element_text(flat[index]))
                index += 1
            return
        for _ in range(count):
            opened = index < limit
            if opened:
                out.append("[")
            dim(d + 1)
            if opened or index < limit:
                out.append("]")

    dim(0)
    return "".join(out) + ("..." if flat.size > limit else "")


def summarize_v2(value: Any, summarize: int = _DEFAULT_SUMMARIZE) -> str:
    """A value as `tf.print` shows it: the first and last `summarize` entries of every dimension
    (all when negative), "..." between them, rows on lines of their own.

    >>> summarize_v2(np.arange(10))
    '[0 1 2 ... 7 8 9]'
    >>> print(summarize_v2(np.array([[1.0, 2.5], [3.0, 4.0]])))
    [[1 2.5]
     [3 4]]
    """
    array = np.asarray(value)
    flat = array.reshape(-1)
    limit = _limit(flat.size, summarize)
    if array.ndim == 0:
        text = _element_text(flat[0]) if limit else ""
        return text + ("..." if flat.size > limit else "")
    rank = array.ndim

    def spacing(d: int) -> str:
        return " " if d == rank - 1 else "\n" * (rank - d - 1) + " " * (d + 1)

    def dim(d: int, start: int) -> str:
        if d == rank:
            return _element_text(flat[start])
        count = array.shape[d]
        step = int(np.prod(array.shape[d + 1 :], dtype=np.int64))
        parts = ["["]
        for i in range(min(limit, count)):
            if i > 0:
                parts.append(spacing(d))
            parts.append(dim(d + 1, start + step * i))
        if count > 2 * limit:
            parts += [spacing(d), "..."]
        for i in range(max(limit, count - limit), count):
            parts += [spacing(d), dim(d + 1, start + step * i)]
        return "".join(parts) + "]"

    return dim(0, 0)


def _emit_on_live_path(ctx: Any, token: str, emit: Any, values: Sequence[Any]) -> None:
    """`emit(*values)` on the host: now (interpreted), or from the compiled step each time it
    runs the op, ordered with the step's other callbacks (see `host_callback`). A stream that
    cannot be written (a closed file, a bad path) fails the run with UnknownError."""
    op = ctx.op

    def emit_or_error(*args: Any) -> None:
        try:
            emit(*args)
        except (OSError, ValueError) as err:
            raise errors.UnknownError(None, op, f"{op.type} could not write: {err}") from err

    if not tracing():
        emit_or_error(*values)
        return

    def host(*args: Any) -> tuple:
        try:
            emit_or_error(*args)
        except errors.UnknownError as err:
            return (record_failure(err),)
        return (np.int64(0),)

    call_on_host(getattr(ctx, "live", True), token, host, [], values, ordered=True)


# The check raises a failed write, and makes `run` wait for the compiled step's prints.
_CHECK = Check(callback_failed, raise_recorded)


# -- Print --------------------------------------------------------------------------------------
_print_counts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # op -> times printed
_print_lock = threading.Lock()


def _print_infer(op) -> list:
    x = op.inputs[0]
    return [(x.dtype, x.shape)]


def _print_now(op: Operation, *values: Any) -> None:
    first_n = op.get_attr("first_n")
    if first_n >= 0:
        with _print_lock:
            count = _print_counts.get(op, 0)
            if count >= first_n:
                return
            _print_counts[op] = count + 1
    summarize = op.get_attr("summarize")
    text = op.get_attr("message") + "".join(f"[{summarize_v1(v, summarize)}]" for v in values)
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _print_kernel(ctx, x, *data, message: str, first_n: int, summarize: int, token: str):
    _emit_on_live_path(ctx, token, functools.partial(_print_now, ctx.op), data)
    return x


register_op("Print", infer=_print_infer, kernel=_print_kernel, stateful=True, check=_CHECK)


@register_gradient("Print")
def _print_grad(op, grad, *_):
    return [grad] + [None] * (len(op.inputs) - 1)


@export("Print")
def Print(  # noqa: N802 (TF1's name)
    input_: Any,
    data: Sequence[Any],
    message: str | None = None,
    first_n: int | None = None,
    summarize: int | None = None,
    name: str | None = None,
) -> Tensor:
    """`input_`, printing `message` and the values of `data` to stderr each time it runs
    (TF1's `tf.Print`).

    Args:
      input_: the Tensor passed through.
      data: the Tensors whose values are printed, each as `[v0 v1 v2...]`.
      message: printed first (default: nothing).
      first_n: print only the first `first_n` times this op runs (negative, the default: always).
      summarize: the number of entries printed per tensor (default 3; negative: all).
      name: a name for the operation.

    Returns:
      A Tensor equal to `input_`; use it in place of `input_` so the print runs. Gradients pass
      through it to `input_`.

    >>> x = sl.constant([1.0, 2.0, 3.0, 4.0])
    >>> y = sl.Print(x, [x, sl.reduce_sum(x)], message="x and its sum: ")
    >>> sl.Session().run(y)  # stderr: "x and its sum: [1 2 3...][10]"
    array([1., 2., 3., 4.], dtype=float32)
    """
    input_ = convert_to_tensor(input_, name="input")
    if not isinstance(data, (list, tuple)):
        raise TypeError(f"Expected list for 'data' argument to 'Print' Op, not {data!r}.")
    for arg, value in (("first_n", first_n), ("summarize", summarize)):
        if value is not None and not isinstance(value, (int, np.integer)):
            raise TypeError(f"Expected int for argument '{arg}' of 'Print' Op, not {value!r}.")
    tensors = [convert_to_tensor(d) for d in data]
    attrs = {
        "message": "" if message is None else str(message),
        "first_n": -1 if first_n is None else int(first_n),
        "summarize": _DEFAULT_SUMMARIZE if summarize is None else int(summarize),
        "token": new_token("print"),
    }
    return apply_op("Print", [input_, *tensors], attrs, name=name or "Print").outputs[0]


# -- PrintV2 (tf.print) -------------------------------------------------------------------------
_LOG_LEVELS = {
    logging.info: "log(info)",
    logging.INFO: "log(info)",
    logging.warning: "log(warning)",
    logging.WARNING: "log(warning)",
    logging.error: "log(error)",
    logging.ERROR: "log(error)",
}
_LEVEL_OF = {
    "log(info)": logging.INFO,
    "log(warning)": logging.WARNING,
    "log(error)": logging.ERROR,
}


def _stream_name(stream: Any) -> str:
    """TF's names of the output streams: "stderr", "stdout", "log(info)", "file://<path>"."""
    if stream is None or stream is sys.stderr or stream is sys.__stderr__:
        return "stderr"
    if stream is sys.stdout or stream is sys.__stdout__:
        return "stdout"
    if isinstance(stream, str) and stream.startswith("file://"):
        return stream
    if not isinstance(stream, bool) and isinstance(stream, (int, type(logging.info))):
        name = _LOG_LEVELS.get(stream)
        if name is not None:
            return name
    raise ValueError(
        f"Unsupported output stream, logging level, or file: {stream!r}. Supported streams are "
        "sys.stdout, sys.stderr, logging.info, logging.warning, logging.error (or their "
        "levels); a file is given as 'file://<path>'."
    )


def _write(stream: str, text: str) -> None:
    if stream in ("stderr", "stdout"):
        out = sys.stderr if stream == "stderr" else sys.stdout  # the current one (pytest's)
        out.write(text)
        out.flush()
    elif stream.startswith("file://"):
        with open(stream[len("file://") :], "a") as f:
            f.write(text)
    else:
        logging.getLogger("sluice").log(_LEVEL_OF[stream], text.rstrip("\n"))


def _print_v2_now(op: Operation, *values: Any) -> None:
    summarize = op.get_attr("summarize")
    dynamic = iter(values)
    text = "".join(
        summarize_v2(next(dynamic), summarize) if piece is None else piece
        for piece in op.get_attr("template")
    )
    _write(op.get_attr("output_stream"), text + op.get_attr("end"))


def _print_v2_kernel(
    ctx, *values, template: tuple, summarize: int, output_stream: str, end: str, token: str
):
    _emit_on_live_path(ctx, token, functools.partial(_print_v2_now, ctx.op), values)
    return ()


register_op("PrintV2", infer=lambda op: [], kernel=_print_v2_kernel, stateful=True, check=_CHECK)
not_differentiable("PrintV2")


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor) or hasattr(x, "_as_tensor")


def _template(inputs: tuple, sep: str) -> tuple[tuple, list[Tensor]]:
    """The text pieces of `inputs` with None for each tensor's value, and those tensors."""

    def is_leaf(x: Any) -> bool:
        return _is_tensor(x) or isinstance(x, str)

    def text_of(x: Any, tensor_text: str) -> str:
        if isinstance(x, str):
            return x
        if _is_tensor(x):
            return tensor_text
        leaves, treedef = jax.tree_util.tree_flatten(x, is_leaf=is_leaf)
        marked = [tensor_text if _is_tensor(leaf) else leaf for leaf in leaves]
        return pprint.pformat(jax.tree_util.tree_unflatten(treedef, marked))

    tensor_free = sep.join(text_of(x, "") for x in inputs)
    placeholder = "{}"
    while placeholder in tensor_free:  # a mark the inputs' own text never contains
        placeholder += "0"
    template = sep.join(text_of(x, placeholder) for x in inputs)
    template = template.replace(f"'{placeholder}'", placeholder)  # pformat quoted it
    tensors = [
        convert_to_tensor(leaf)
        for x in inputs
        for leaf in jax.tree_util.tree_leaves(x, is_leaf=is_leaf)
        if _is_tensor(leaf)
    ]
    pieces: list[str | None] = []
    for i, text in enumerate(template.split(placeholder)):
        if i:
            pieces.append(None)
        if text:
            pieces.append(text)
    return tuple(pieces), tensors


@export("print")
def print_v2(
    *inputs: Any,
    output_stream: Any = None,
    summarize: int | None = _DEFAULT_SUMMARIZE,
    sep: str = " ",
    end: str = "\n",
    name: str | None = None,
) -> Operation:
    """An op that prints `inputs` when it runs (TF's `tf.print`).

    Args:
      *inputs: Tensors, Python strings (printed as they are), other Python values, and
        structures (lists, tuples, dicts) of them (printed as `pprint` shows them).
      output_stream: sys.stderr (the default), sys.stdout, logging.info, logging.warning,
        logging.error, or "file://<path>" (appended to).
      summarize: the first and last entries of each dimension to print (default 3; -1: all).
      sep: printed between the inputs.
      end: printed after the last input.
      name: a name for the operation.

    Returns:
      The PrintV2 Operation: run it, or make other ops depend on it with
      `sl.control_dependencies`.

    Raises:
      ValueError: an unsupported output_stream.

    >>> x = sl.range(10)
    >>> show = sl.print("x:", x, {"twice": x * 2}, output_stream=sys.stdout)
    >>> sl.Session().run(show)
    x: [0 1 2 ... 7 8 9] {'twice': [0 2 4 ... 14 16 18]}
    """
    stream = _stream_name(output_stream)
    summarize = _DEFAULT_SUMMARIZE if summarize is None else int(summarize)
    pieces, tensors = _template(inputs, str(sep))
    attrs = {
        "template": pieces,
        "summarize": summarize,
        "output_stream": stream,
        "end": str(end),
        "token": new_token("print"),
    }
    return apply_op("PrintV2", tensors, attrs, name=name or "PrintV2")


__all__ = ["Print", "print_v2", "summarize_v1", "summarize_v2"]
