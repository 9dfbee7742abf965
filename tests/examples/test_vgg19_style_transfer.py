"""examples/vgg19_style_transfer.py at a tiny size with random VGG19 weights: it writes PNGs and
checkpoints, and run again it continues from the latest checkpoint with the losses of an
uninterrupted run."""

from __future__ import annotations

import csv
import importlib.util
import os
import struct
import zlib

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")
TINY = ["--size", "32", "--save-every", "2", "--image-every", "2"]


@pytest.fixture
def example(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(EXAMPLES)  # the script imports its helpers from there
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))  # no cached VGG19 weights
    path = os.path.join(EXAMPLES, "vgg19_style_transfer.py")
    spec = importlib.util.spec_from_file_location("vgg19_style_transfer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _history(out_dir) -> list[tuple[int, float]]:
    with open(os.path.join(out_dir, "history.csv"), newline="") as f:
        return [(int(row["step"]), float(row["loss"])) for row in csv.DictReader(f)]


def _steps(out_dir, prefix: str, suffix: str) -> list[int]:
    names = [n for n in os.listdir(out_dir) if n.startswith(prefix) and n.endswith(suffix)]
    return sorted(int(n[len(prefix) : -len(suffix)]) for n in names)


def _read_png(path) -> np.ndarray:
    """Decodes the 8-bit RGB PNGs the example writes (filter type 0 rows)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, offset = {}, 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc
        chunks[kind] = body
        offset += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour) == (8, 2)
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, -1)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(height, width, 3)


def test_runs_writes_pngs_and_checkpoints_then_resumes(example, tmp_path, capsys):
    out = str(tmp_path / "run")
    example.main([*TINY, "--steps", "3", "--out-dir", out])
    printed = capsys.readouterr().out
    assert "RANDOM weights" in printed and "restored" not in printed
    assert [s for s, _ in _history(out)] == [1, 2, 3]
    assert _steps(out, "style-", ".h5") == [2, 3]
    assert _steps(out, "image-", ".png") == [2, 3]
    first = _history(out)

    example.main([*TINY, "--steps", "2", "--out-dir", out])
    assert f"restored {os.path.join(out, 'style-3.h5')}" in capsys.readouterr().out
    history = _history(out)
    assert [s for s, _ in history] == [1, 2, 3, 4, 5]  # the global step went on
    assert history[:3] == first
    assert history[4][1] < history[0][1]  # the loss goes down
    assert _steps(out, "style-", ".h5") == [2, 3, 4, 5]
    assert _steps(out, "image-", ".png") == [2, 3, 4, 5]
    image = _read_png(os.path.join(out, "image-5.png"))
    assert image.shape == (32, 32, 3) and image.std() > 0


@pytest.mark.slow  # a third run of VGG19: resuming gives the uninterrupted run's losses exactly
def test_resumed_losses_equal_an_uninterrupted_run(example, tmp_path):
    parts, whole = str(tmp_path / "parts"), str(tmp_path / "whole")
    example.main([*TINY, "--steps", "2", "--out-dir", parts])
    example.main([*TINY, "--steps", "2", "--out-dir", parts])
    example.main([*TINY, "--steps", "4", "--out-dir", whole])
    assert _history(parts) == _history(whole)


def test_helpers(example, tmp_path, capsys):
    rgb = (np.arange(4 * 5 * 3).reshape(4, 5, 3) * 4).astype(np.uint8)
    example.png_files.write_png(str(tmp_path / "x.png"), rgb)
    np.testing.assert_array_equal(_read_png(tmp_path / "x.png"), rgb)
    pixels = rgb.astype(np.float32)
    np.testing.assert_array_equal(example.deprocess(example.vgg19.preprocess_input(pixels)), rgb)
    np.save(tmp_path / "x.npy", rgb)
    assert example.load_image(str(tmp_path / "x.npy"), 8).shape == (8, 8, 3)
    with pytest.raises(SystemExit):
        example.parse_args(["--size", "16"])
    assert "--size must be at least 32" in capsys.readouterr().err
