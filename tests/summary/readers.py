"""Readers for what summaries write, independent of the writer: event files (TFRecord framing
with its CRCs checked, `Event` protos), PNG pixels and WAV samples."""

from __future__ import annotations

import glob
import io
import os
import struct
import wave
import zlib

import numpy as np
import pytest

event_pb2 = pytest.importorskip("tensorboardX.proto.event_pb2")
record_writer = pytest.importorskip("tensorboardX.record_writer")


def event_files(logdir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")))


def read_events(path: str) -> list:
    """Every `Event` of one event file, each record's length and data CRCs checked."""
    data = open(path, "rb").read()
    events, at = [], 0
    while at < len(data):
        header = data[at : at + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[at + 8 : at + 12])
        assert length_crc == record_writer.masked_crc32c(header)
        record = data[at + 12 : at + 12 + length]
        (data_crc,) = struct.unpack("<I", data[at + 12 + length : at + 16 + length])
        assert data_crc == record_writer.masked_crc32c(record)
        events.append(event_pb2.Event.FromString(record))
        at += 16 + length
    return events


def decode_png(data: bytes) -> np.ndarray:
    """Pixels [height, width, channels] of an 8-bit grey, RGB or RGBA PNG whose rows use
    filter 0."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = {}, 8
    while at < len(data):
        (length,), kind = struct.unpack(">I", data[at : at + 4]), data[at + 4 : at + 8]
        body = data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + body)
        chunks[kind] = chunks.get(kind, b"") + body
        at += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    channels = {0: 1, 2: 3, 6: 4}[color]
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, -1)
    assert depth == 8 and np.all(raw[:, 0] == 0)
    return raw[:, 1:].reshape(height, width, channels)


def decode_wav(data: bytes) -> tuple[int, np.ndarray]:
    """(sample rate, int16 samples [frames, channels]) of a 16-bit PCM WAV file."""
    with wave.open(io.BytesIO(data)) as w:
        assert w.getsampwidth() == 2
        frames = np.frombuffer(w.readframes(w.getnframes()), "<i2")
        return w.getframerate(), frames.reshape(-1, w.getnchannels())
