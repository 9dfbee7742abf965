"""TF1's `tf.summary` op builders: scalar, histogram, image, audio, text, merge, merge_all.

Each builder opens a name scope named after the summary (under `family` when given), names its
op after that scope and uses the scope as the tag, so tags are unique the way op names are:
`loss`, then `loss_1`; `train/loss` inside `name_scope("train")`; `family/family/loss` with a
family (TF1 puts the family both before the scope, to pick TensorBoard's tab, and in it). The
op joins `GraphKeys.SUMMARIES` unless `collections` says otherwise (`[]`: no collection).
"""

from __future__ import annotations

import logging
import re
from typing import Any, Callable, Iterable

import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys, Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.core.core_ops import apply_op, convert_to_tensor
from sluice.framework.ops.host import summary_ops  # noqa: F401  (registers the summary ops)

_logger = logging.getLogger("sluice")
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")


def clean_tag(name: str | None) -> str | None:
    """`name` with every character TensorBoard does not take in a tag replaced by "_" and
    leading slashes dropped (TF1 logs the change)."""
    if name is None:
        return None
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if cleaned != name:
        _logger.info("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


def _summary_op(
    op_type: str,
    name: str,
    family: str | None,
    values: list,
    attrs: dict,
    collections: Iterable[str] | None,
    default_name: str | None = None,
    inputs: Callable[[], list] | None = None,
) -> Tensor:
    """Builds one summary op in its scope (see the module docstring) and collects it.
    `inputs()` makes the op's inputs inside the scope (default: `values` as tensors)."""
    name, family = clean_tag(name), clean_tag(family)
    if name is None and default_name is None:  # TF1's name_scope refuses it too
        raise ValueError(f"{op_type}: a summary needs a name (its tag), got None.")
    base = name if family is None else f"{family}/{name}"
    with graph_lib.name_scope(base, default_name, values=values) as scope:
        tag = scope.rstrip("/") if family is None else f"{family}/{scope.rstrip('/')}"
        tensors = inputs() if inputs else [convert_to_tensor(x) for x in values]
        op = apply_op(op_type, tensors, dict(attrs, tag=tag), name=scope)
    _collect(op.outputs[0], collections, [GraphKeys.SUMMARIES])
    return op.outputs[0]


def _collect(value: Tensor, collections: Iterable[str] | None, default: list[str]) -> None:
    for key in default if collections is None else collections:
        value.graph.add_to_collection(key, value)


@export("summary.scalar")
def scalar(
    name: str, tensor: Any, collections: Iterable[str] | None = None, family: str | None = None
) -> Tensor:
    """A summary of one real number (TF1 `tf.summary.scalar`), shown in TensorBoard's
    scalars tab.

    Args:
      name: the summary's name; with the name scope, its tag.
      tensor: a real scalar (a float's value is written as float32).
      collections: the graph collections to add it to (default `[GraphKeys.SUMMARIES]`).
      family: a tag prefix, the TensorBoard tab it shows in.

    Returns:
      A summary tensor; `sess.run` returns its serialized `Summary` protocol buffer (bytes).

    Raises:
      ValueError: `tensor` is not a scalar.

    >>> loss = sl.constant(0.25)
    >>> s = sl.summary.scalar("loss", loss)
    >>> sl.summary.Summary.FromString(sl.Session().run(s)).value[0].simple_value
    0.25
    """
    return _summary_op("ScalarSummary", name, family, [tensor], {}, collections)


@export("summary.histogram")
def histogram(
    name: str, values: Any, collections: Iterable[str] | None = None, family: str | None = None
) -> Tensor:
    """A histogram of all the entries of `values` (TF1 `tf.summary.histogram`), in TF1's
    default buckets (see `sluice.framework.ops.host.summary_ops.default_bucket_limits`).

    Raises:
      InvalidArgumentError: when run on values with a NaN or Inf (as TF1's kernel).
    """
    return _summary_op(
        "HistogramSummary", name, family, [values], {}, collections, default_name="HistogramSummary"
    )


@export("summary.image")
def image(
    name: str,
    tensor: Any,
    max_outputs: int = 3,
    collections: Iterable[str] | None = None,
    family: str | None = None,
) -> Tensor:
    """Up to `max_outputs` images of a batch [batch, height, width, channels] as PNGs (TF1
    `tf.summary.image`): 1 channel is grey, 3 RGB, 4 RGBA. uint8 images are written as they
    are; a float image is scaled on its own, as TF1's kernel does: when no value is negative
    its largest value becomes 255, else its values are centred on 128 and scaled by the largest
    magnitude (127); non-finite pixels are red. Tags: `<tag>/image/<i>`, or `<tag>/image` when
    `max_outputs` is 1.
    """
    max_outputs = int(max_outputs)
    if max_outputs < 1:
        raise ValueError(f"sl.summary.image: max_outputs must be >= 1, got {max_outputs}.")
    return _summary_op(
        "ImageSummary", name, family, [tensor], {"max_images": max_outputs}, collections
    )


@export("summary.audio")
def audio(
    name: str,
    tensor: Any,
    sample_rate: Any,
    max_outputs: int = 3,
    collections: Iterable[str] | None = None,
    family: str | None = None,
) -> Tensor:
    """Up to `max_outputs` clips of a float32 batch [batch, frames] or [batch, frames,
    channels], samples in [-1, 1], as 16-bit WAV files (TF1 `tf.summary.audio`). Tags:
    `<tag>/audio/<i>`, or `<tag>/audio` when `max_outputs` is 1.

    Args:
      sample_rate: samples per second, > 0: a number or a float32 scalar tensor.

    Raises:
      ValueError: `max_outputs` < 1, or `sample_rate` is a number <= 0.
      TypeError: `sample_rate` is a tensor that is not float32.
      InvalidArgumentError: when run, if a `sample_rate` tensor is not > 0 (as TF1's kernel).
    """
    max_outputs = int(max_outputs)
    if max_outputs < 1:
        raise ValueError(f"sl.summary.audio: max_outputs must be >= 1, got {max_outputs}.")
    if isinstance(sample_rate, (int, float, np.number)) and not sample_rate > 0:
        raise ValueError(f"sl.summary.audio: sample_rate must be > 0, got {sample_rate}.")
    rate_dtype = getattr(sample_rate, "dtype", None)
    if isinstance(sample_rate, Tensor) and rate_dtype != dtypes.float32:
        raise TypeError(
            f"sl.summary.audio: sample_rate must be a float32 scalar, got the "
            f"{np.dtype(rate_dtype).name} tensor {sample_rate.name}."
        )
    return _summary_op(
        "AudioSummaryV2",
        name,
        family,
        [tensor],
        {"max_outputs": max_outputs},
        collections,
        inputs=lambda: [
            convert_to_tensor(tensor),
            convert_to_tensor(sample_rate, dtypes.float32, name="sample_rate"),
        ],
    )


@export("summary.text")
def text(name: str, tensor: Any, collections: Iterable[str] | None = None) -> Tensor:
    """Text for TensorBoard's text tab (TF1 `tf.summary.text`; markdown is rendered).

    sluice's text summary is not computed in a step, so the text is given when the graph is
    built (not as a string tensor): a Python str
    (or bytes, UTF-8), or a nested list or NumPy array of them, written as a string tensor of
    that shape, as TF1 writes one.

    Raises:
      TypeError: `tensor` is a Tensor or holds something other than strings.
    """
    if isinstance(tensor, Tensor) or hasattr(tensor, "_as_graph_element"):
        raise TypeError(
            f"sl.summary.text takes the text as Python strings (str, bytes, or a nested list or "
            f"NumPy array of them) when the graph is built: sluice's text summaries are not "
            f"computed in a step, so the tensor {tensor!r} cannot be written as text."
        )
    array = np.asarray(tensor, dtype=object)
    strings = []
    for s in array.reshape(-1):
        if isinstance(s, bytes):
            s = s.decode("utf-8")
        if not isinstance(s, str):
            raise TypeError(f"sl.summary.text: expected strings, got {type(s).__name__} {s!r}.")
        strings.append(s)
    attrs = {"strings": tuple(strings), "shape": TensorShape(array.shape)}
    return _summary_op("TextSummary", name, None, [], attrs, collections)


@export("summary.merge")
def merge(
    inputs: list, collections: Iterable[str] | None = None, name: str | None = None
) -> Tensor:
    """One summary holding every value of `inputs` (TF1 `tf.summary.merge`): fetching it
    gives one serialized `Summary`, its values in the order of `inputs`.

    Raises:
      InvalidArgumentError: when run, if two values share a tag (as TF1's kernel).
    """
    inputs, name = list(inputs), clean_tag(name)
    with graph_lib.name_scope(name, "Merge", values=inputs):
        op = apply_op("MergeSummary", inputs, {}, name=name)
    _collect(op.outputs[0], collections, [])
    return op.outputs[0]


@export("summary.merge_all")
def merge_all(
    key: str = GraphKeys.SUMMARIES, scope: str | None = None, name: str | None = None
) -> Tensor | None:
    """`merge` of every summary in the default graph's collection `key` (whose names match
    `scope` when given); None when there is none (TF1 `tf.summary.merge_all`)."""
    summaries = graph_lib.get_collection(key, scope=scope)
    return merge(summaries, name=name) if summaries else None
