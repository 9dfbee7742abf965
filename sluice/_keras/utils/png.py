"""PNG files from uint8 arrays, with no imaging library: what the TensorBoard callback's image
summaries, `sl.summary.image` and the examples' pictures need (8-bit grey, RGB or RGBA, no
interlace, one zlib stream).

>>> data = encode_png(np.zeros((2, 3), np.uint8))
>>> data[:8] == b"\\x89PNG\\r\\n\\x1a\\n", len(data) > 40
(True, True)
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np

# channels -> PNG colour type (0: grey, 2: truecolour RGB, 6: truecolour with alpha)
_COLOR_TYPES = {1: 0, 3: 2, 4: 6}


def encode_png(image: np.ndarray) -> bytes:
    """A uint8 image [height, width] (grey) or [height, width, 1, 3 or 4] as PNG file bytes."""
    image = np.asarray(image)
    if image.ndim == 2:
        image = image[..., None]
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in _COLOR_TYPES:
        raise ValueError(
            f"encode_png takes a uint8 image [height, width] or [height, width, 1, 3 or 4]; got "
            f"{image.dtype} of shape {image.shape}."
        )
    height, width, channels = image.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0)
    rows = np.ascontiguousarray(image).reshape(height, width * channels)
    scanlines = b"".join(b"\x00" + row.tobytes() for row in rows)  # filter type 0 per row
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(scanlines, 6))
        + chunk(b"IEND", b"")
    )


def write_png(path: str, image: np.ndarray) -> None:
    """Writes `image` (see `encode_png`) to `path`: to a temporary file first, then renamed into
    place, so a reader never sees half a picture."""
    data = encode_png(image)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
