"""Summary ops (TF1's ScalarSummary, HistogramSummary, ImageSummary, AudioSummaryV2, text, and
MergeSummary): what TensorBoard shows, computed on the device inside the step.

TF1's summary ops output a string tensor holding a serialized `Summary` protocol buffer. sluice's
strings live on the host only, and the compiled engine must not stop for a host callback per
summary, so
a summary op outputs a *payload*: a uint8 vector made of one self-describing segment per
summary,

    b"SLSM" | header length (uint32, little-endian) | header (JSON) | data

where the header (a constant of the op: its tag, kind and the shapes the kernel was traced
with) says how to read the data, which the kernel computes on the device: a scalar's float32,
a histogram's statistics and bucket counts (float64, TF1's default buckets), images already
scaled to uint8 as TF1's kernel scales them, audio samples as float32. MergeSummary only
concatenates its inputs' payloads, so payloads pass unchanged through cond branches and nested
merges. When a session fetches a summary op's output, the fetch converter that
`sluice.summary` registers for these op types turns the payload into the serialized `Summary`
bytes on the host (PNG and WAV encoding included), as TF1's kernels would have produced them.

Summaries carry no gradient.
"""

from __future__ import annotations

import functools
import json
import struct
from typing import Any, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from sluice.framework.ir import dtypes
from sluice.framework.ir.registry import Check, not_differentiable, register_op
from sluice.framework.ops.core.shape_rules import require_dtype, require_rank

MAGIC = b"SLSM"
SUMMARY_OP_TYPES = (
    "ScalarSummary",
    "HistogramSummary",
    "ImageSummary",
    "AudioSummaryV2",
    "TextSummary",
    "MergeSummary",
)
# the colour of a non-finite pixel in a float image, per channel (TF1's default: opaque red)
BAD_COLOR = (255, 0, 0, 255)
_HEADER_LENGTH = struct.Struct("<I")


# -- payloads -----------------------------------------------------------------------------------
def _segment(header: dict, data: Any) -> Any:
    """One payload segment: the constant header, then `data` (any array) as raw bytes."""
    data = jnp.asarray(data)
    if data.dtype != jnp.uint8:
        data = lax.bitcast_convert_type(data, jnp.uint8)
    data = data.reshape(-1)
    head = json.dumps(dict(header, nbytes=int(data.size)), sort_keys=True).encode()
    prefix = np.frombuffer(MAGIC + _HEADER_LENGTH.pack(len(head)) + head, np.uint8)
    return jnp.concatenate([jnp.asarray(prefix), data])


def segments(payload: np.ndarray) -> Iterator[tuple[dict, bytes]]:
    """(header, data bytes) of every segment of a fetched payload, in order.

    Raises:
      ValueError: `payload` is not made of summary segments.
    """
    raw = np.asarray(payload, np.uint8).tobytes()
    at = 0
    while at < len(raw):
        if raw[at : at + 4] != MAGIC or at + 8 > len(raw):
            raise ValueError(
                f"bytes {at}.. of the value are not a summary payload (expected the "
                f"marker {MAGIC!r}): only the outputs of summary ops decode"
            )
        (length,) = _HEADER_LENGTH.unpack_from(raw, at + 4)
        header = json.loads(raw[at + 8 : at + 8 + length])
        start = at + 8 + length
        at = start + header["nbytes"]
        yield header, raw[start:at]


def _require_real(t, op_name: str) -> None:
    require_dtype(
        t,
        f"real numeric ({op_name} takes ints or floats)",
        lambda d: dtypes.is_floating(d) or dtypes.is_integer(d),
    )


def _payload_shape(op) -> list:
    return [(np.dtype(np.uint8), [None])]


# -- ScalarSummary ------------------------------------------------------------------------------
def _scalar_infer(op) -> list:
    values = op.inputs[0]
    _require_real(values, "a scalar summary")
    if values.shape.rank not in (None, 0):
        raise ValueError(
            f"tags and values not the same shape: [] != {values.shape} (a scalar "
            "summary takes a single value)"
        )
    return _payload_shape(op)


def _scalar_kernel(values, *, tag):
    if values.shape != ():
        raise ValueError(
            f"tags and values not the same shape: [] != {list(values.shape)} (a "
            "scalar summary takes a single value)"
        )
    return _segment({"kind": "scalar", "tag": tag}, values.astype(jnp.float32))


register_op("ScalarSummary", infer=_scalar_infer, kernel=_scalar_kernel)


# -- HistogramSummary ---------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def default_bucket_limits() -> np.ndarray:
    """TF1's default histogram bucket limits (`histogram.cc`): 0, then ±1e-12 growing by 10%
    up to 1e20, closed by ±DBL_MAX; a value v counts in the first bucket whose limit is > v."""
    positive = []
    v = 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    dbl_max = np.finfo(np.float64).max
    negative = [-x for x in reversed(positive)]
    limits = np.array([-dbl_max, *negative, 0.0, *positive, dbl_max], np.float64)
    limits.setflags(write=False)  # shared by every call
    return limits


def _histogram_infer(op) -> list:
    _require_real(op.inputs[0], "a histogram summary")
    return _payload_shape(op)


def _histogram_kernel(values, *, tag):
    """min, max, count, sum and sum of squares (float64, as TF1 accumulates), then the count
    of every default bucket."""
    x = jnp.asarray(values, jnp.float64).reshape(-1)
    limits = default_bucket_limits()
    index = jnp.minimum(jnp.searchsorted(limits, x, side="right"), limits.size - 1)
    counts = jnp.zeros(limits.size, jnp.float64).at[index].add(1.0)
    empty = x.size == 0
    stats = jnp.stack(
        [
            limits[-1] if empty else jnp.min(x),
            -limits[-1] if empty else jnp.max(x),
            jnp.float64(x.size),
            jnp.sum(x),
            jnp.sum(x * x),
        ]
    )
    return _segment({"kind": "histogram", "tag": tag}, jnp.concatenate([stats, counts]))


def _non_finite_values(values, *, tag):
    """Whether a value is NaN or Inf; the detail says which the first one is (1: NaN, 2: Inf),
    since TF1's kernel stops at the first and names it."""
    if not jnp.issubdtype(values.dtype, jnp.floating) or values.size == 0:
        return jnp.bool_(False), jnp.int64(0)
    flat = values.reshape(-1)
    bad = ~jnp.isfinite(flat)
    first = flat[jnp.argmax(bad)]
    return jnp.any(bad), jnp.where(jnp.isnan(first), 1, 2).astype(jnp.int64)


def _non_finite_message(op, detail: int) -> str:
    return f"{'Nan' if detail == 1 else 'Infinity'} in summary histogram for: {op.name}"


register_op(
    "HistogramSummary",
    infer=_histogram_infer,
    kernel=_histogram_kernel,
    check=Check(_non_finite_values, _non_finite_message),  # TF1's kernel refuses NaN and Inf
)


# -- ImageSummary -------------------------------------------------------------------------------
_IMAGE_DTYPES = ("uint8", "float16", "float32", "float64")  # TF1's


def _image_infer(op) -> list:
    images = op.inputs[0]
    require_dtype(images, "uint8 or floating", lambda d: np.dtype(d).name in _IMAGE_DTYPES)
    require_rank(images, 4, "images [batch, height, width, channels]")
    if images.shape.rank == 4 and images.shape[3] not in (None, 1, 3, 4):
        raise ValueError(f"Tensor must be 4-D with last dim 1, 3, or 4, not {images.shape}")
    return _payload_shape(op)


_SAME_WIDTH_INT = {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}


def _rounded_apart(product):
    """`product`, unchanged, but passed through integer ops the compiler cannot see through:
    XLA's CPU backend would otherwise fuse the multiply and the add after it into one FMA,
    rounding once where TF1's kernel rounds the product and then the sum: the darkest pixel,
    whose product rounds to -127 but is a little below it, would truncate to 0, not TF1's 1
    (and the two engines, fusing differently, would disagree)."""
    int_type = _SAME_WIDTH_INT[product.dtype.itemsize]
    bits = lax.bitcast_convert_type(product, int_type)
    zero = (product != product).astype(int_type)  # 0: the pixels are finite here
    return lax.bitcast_convert_type(bits ^ zero, product.dtype)


def _to_uint8_image(image):
    """One float image [h, w, c] as TF1's kernel quantises it: all values >= 0 scaled so the
    largest is 255; else scaled by the largest magnitude and centred on 128. Truncated to
    uint8; pixels with a non-finite channel become `BAD_COLOR`. The range comes from the
    finite pixels, in float32; the scaling is computed in the image's dtype, as TF1's."""
    compute = image.dtype
    finite = jnp.all(jnp.isfinite(image), axis=-1, keepdims=True)
    low = jnp.min(jnp.where(finite, image, jnp.inf)).astype(jnp.float32)
    high = jnp.max(jnp.where(finite, image, -jnp.inf)).astype(jnp.float32)
    largest = jnp.maximum(jnp.abs(low), jnp.abs(high))
    tiny = 1e-6
    scale = jnp.where(
        low < 0,
        jnp.where(largest < tiny, 0.0, 127.0 / largest),
        jnp.where(high < tiny, 0.0, 255.0 / high),
    ).astype(compute)
    offset = jnp.where(low < 0, 128.0, 0.0).astype(compute)
    image = jnp.where(finite, image, 0)
    scaled = _rounded_apart(image * scale) + offset
    quantised = jnp.clip(scaled, 0, 255).astype(jnp.uint8)
    bad = jnp.asarray(BAD_COLOR[: image.shape[-1]], jnp.uint8)
    return jnp.where(finite, quantised, bad)


def _image_kernel(images, *, tag, max_images):
    if images.ndim != 4 or images.shape[3] not in (1, 3, 4):
        raise ValueError(f"Tensor must be 4-D with last dim 1, 3, or 4, not {list(images.shape)}")
    images = images[:max_images]
    if images.dtype != jnp.uint8 and images.size:
        images = jax.vmap(_to_uint8_image)(images)
    header = {"kind": "image", "tag": tag, "max_outputs": max_images, "shape": list(images.shape)}
    return _segment(header, images.astype(jnp.uint8))


register_op("ImageSummary", infer=_image_infer, kernel=_image_kernel)


# -- AudioSummaryV2 -----------------------------------------------------------------------------
def _audio_infer(op) -> list:
    audio, sample_rate = op.inputs
    require_dtype(audio, "float32", lambda d: d == dtypes.float32)
    require_rank(audio, (2, 3), "audio [batch, frames] or [batch, frames, channels]")
    require_dtype(sample_rate, "float32 sample rate", lambda d: d == dtypes.float32)
    require_rank(sample_rate, 0, "sample_rate")
    return _payload_shape(op)


def _audio_kernel(audio, sample_rate, *, tag, max_outputs):
    if audio.ndim == 2:
        audio = audio[..., None]
    audio = audio[:max_outputs]
    header = {"kind": "audio", "tag": tag, "max_outputs": max_outputs, "shape": list(audio.shape)}
    return _segment(header, jnp.concatenate([sample_rate.reshape(1), audio.reshape(-1)]))


def _sample_rate_not_positive(audio, sample_rate, *, tag, max_outputs):
    return ~(sample_rate > 0), jnp.int64(0)  # NaN fails too, as in TF1's kernel


register_op(
    "AudioSummaryV2",
    infer=_audio_infer,
    kernel=_audio_kernel,
    check=Check(
        _sample_rate_not_positive,
        lambda op, _: f"sample_rate must be > 0 (audio summary {op.name})",
    ),
)


# -- TextSummary --------------------------------------------------------------------------------
# TF1 writes text as a TensorSummaryV2 of a string tensor. sluice's summaries are computed in the
# step, where no string goes, so the strings are the op's attr, given when the graph is built;
# the payload is constant.
def _text_kernel(*, tag, strings, shape):
    header = {"kind": "text", "tag": tag, "strings": list(strings), "shape": shape.as_list()}
    return _segment(header, jnp.zeros([0], jnp.uint8))


register_op("TextSummary", infer=_payload_shape, kernel=_text_kernel)


# -- MergeSummary -------------------------------------------------------------------------------
def _merge_infer(op) -> list:
    if not op.inputs:
        raise ValueError("merge needs at least one summary to merge")
    for t in op.inputs:
        if t.dtype != np.uint8 or t.shape.rank not in (None, 1):
            raise TypeError(
                f"expected summary tensors (the outputs of sl.summary ops, uint8 "
                f"payloads of rank 1), got {t.dtype.name}{t.shape} for {t.name}"
            )
    return _payload_shape(op)


register_op("MergeSummary", infer=_merge_infer, kernel=lambda *payloads: jnp.concatenate(payloads))

not_differentiable(*SUMMARY_OP_TYPES)
