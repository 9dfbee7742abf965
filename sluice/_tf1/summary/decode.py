"""From a summary op's fetched payload to the serialized `Summary` protocol buffer TF1's kernels
would have output (see `sluice.framework.ops.host.summary_ops` for the payload): the session applies
`summary_bytes` to every fetched output of a summary op, also when an identity, a cond or a while
loop passed it on (`registry.fetch_converter_for`), so `sess.run(merged)` is `bytes` that
`FileWriter.add_summary` and `Summary.FromString` take.

The host does here what needs no device: PNG and WAV encoding, the tags of image and audio
values, and the compaction of histogram buckets.
"""

from __future__ import annotations

import io
import wave
from typing import Any

import numpy as np

from sluice._keras.utils.png import encode_png
from sluice._tf1.summary._protos import protos
from sluice.framework.ir import errors, registry
from sluice.framework.ops.host import summary_ops


def summary_bytes(op: Any, payload: np.ndarray) -> bytes:
    """The serialized `Summary` of `payload`, the fetched output of the summary op `op`.

    Raises:
      InvalidArgumentError: a tag occurs twice in a MergeSummary's inputs (as TF1's kernel; only
        a merge can hold two values), or a merged input is not a summary.
      ImportError: tensorboardX (which holds the protos) is not installed.
    """
    summary = protos("Fetching a summary").summary.Summary()
    try:
        for header, data in summary_ops.segments(payload):
            _ADD[header["kind"]](summary, header, data)
    except ValueError as err:
        raise errors.InvalidArgumentError(
            None, op, f"Could not parse one of the summary inputs of {op.name}: {err}"
        ) from None
    seen = set()
    for value in summary.value:
        if value.tag in seen:
            raise errors.InvalidArgumentError(
                None, op, f"Duplicate tag {value.tag} found in summary inputs"
            )
        seen.add(value.tag)
    return summary.SerializeToString()


def _add_scalar(summary: Any, header: dict, data: bytes) -> None:
    summary.value.add(tag=header["tag"], simple_value=float(np.frombuffer(data, "<f4")[0]))


def _add_histogram(summary: Any, header: dict, data: bytes) -> None:
    """TF1's `Histogram::EncodeToProto` without zero buckets kept: a run of empty buckets is
    written as one, at the limit of its last."""
    values = np.frombuffer(data, "<f8")
    low, high, num, total, squares = values[:5]
    counts, limits = values[5:], summary_ops.default_bucket_limits()
    histo = summary.value.add(tag=header["tag"]).histo
    histo.min, histo.max, histo.num, histo.sum, histo.sum_squares = low, high, num, total, squares
    i = 0
    while i < counts.size:
        end, count = limits[i], counts[i]
        i += 1
        if count <= 0:
            while i < counts.size and counts[i] <= 0:
                end, count = limits[i], counts[i]
                i += 1
        histo.bucket_limit.append(end)
        histo.bucket.append(count)


def _numbered_tags(header: dict, kind: str, n: int) -> list[str]:
    """`tag/image/0`, `tag/image/1`, ... or `tag/image` when at most one was asked for: the
    tags depend on `max_outputs`, not on how many the batch held (TF1)."""
    base = f"{header['tag']}/{kind}"
    return [f"{base}/{i}" for i in range(n)] if header["max_outputs"] > 1 else [base] * n


def _add_images(summary: Any, header: dict, data: bytes) -> None:
    n, height, width, channels = header["shape"]
    images = np.frombuffer(data, np.uint8).reshape(header["shape"])
    for tag, pixels in zip(_numbered_tags(header, "image", n), images):
        image = summary.value.add(tag=tag).image
        image.height, image.width, image.colorspace = height, width, channels
        image.encoded_image_string = encode_png(pixels)


def _add_audio(summary: Any, header: dict, data: bytes) -> None:
    n, frames, channels = header["shape"]
    values = np.frombuffer(data, "<f4")
    sample_rate, clips = float(values[0]), values[1:].reshape(header["shape"])
    for tag, clip in zip(_numbered_tags(header, "audio", n), clips):
        audio = summary.value.add(tag=tag).audio
        audio.sample_rate, audio.num_channels, audio.length_frames = sample_rate, channels, frames
        audio.encoded_audio_string = wav_bytes(clip, sample_rate)
        audio.content_type = "audio/wav"


def wav_bytes(clip: np.ndarray, sample_rate: float) -> bytes:
    """A clip [frames, channels] of floats in [-1, 1] as a 16-bit PCM WAV file, quantised as
    TF1's `EncodeAudioAsS16LEWav`: round(x * 32768) (halves away from zero), clamped to int16;
    the sample rate rounded to an integer, at least 1."""
    scaled = (clip.astype(np.float32) * np.float32(32768)).astype(np.float64)
    rounded = np.trunc(scaled + np.copysign(0.5, scaled))
    samples = np.clip(rounded, -32768, 32767).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(clip.shape[1])
        w.setsampwidth(2)
        w.setframerate(max(1, round(sample_rate)))
        w.writeframes(samples.tobytes())
    return out.getvalue()


def _add_text(summary: Any, header: dict, data: bytes) -> None:
    """TF1's text summary: a string tensor with the text plugin's metadata."""
    pb = protos("Fetching a summary")
    tensor = pb.tensor.TensorProto(
        dtype=pb.types.DT_STRING,
        string_val=[s.encode("utf-8") for s in header["strings"]],
        tensor_shape=pb.tensor_shape.TensorShapeProto(
            dim=[pb.tensor_shape.TensorShapeProto.Dim(size=d) for d in header["shape"]]
        ),
    )
    value = summary.value.add(tag=header["tag"], tensor=tensor)
    value.metadata.plugin_data.plugin_name = "text"


_ADD = {
    "scalar": _add_scalar,
    "histogram": _add_histogram,
    "image": _add_images,
    "audio": _add_audio,
    "text": _add_text,
}

for _op_type in summary_ops.SUMMARY_OP_TYPES:
    registry.register_fetch_converter(_op_type, summary_bytes)
