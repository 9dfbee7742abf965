"""Helpers for the multi-device tests: build one graph split across devices or on one device,
run it in the engines that run a multi-device graph, and read the per-partition statistics."""

from __future__ import annotations

import contextlib
from typing import Any, Callable

import sluice as sl

# A multi-device graph runs partitioned under these; "compiled" refuses it (test_placement.py).
ENGINES = ("auto", "interpreted")


def on(device: str, split: bool) -> Any:
    """`sl.device(device)` when building the split graph; no scope for the one-device graph."""
    return sl.device(device) if split else contextlib.nullcontext()


def short(device_name: str) -> str:
    """'/job:localhost/replica:0/task:0/device:CPU:2' -> 'CPU:2'."""
    return device_name.rsplit("device:", 1)[1]


def by_device(metadata: sl.RunMetadata) -> dict[str, Any]:
    """The run's partition records by short device name."""
    return {short(p.device): p for p in metadata.partitions}


def run_built(
    build: Callable[[bool], tuple[Any, dict]],
    split: bool,
    engine: str = "auto",
    metadata: sl.RunMetadata | None = None,
) -> Any:
    """Builds `build(split) -> (fetches, feed_dict)` in a fresh graph and runs it once."""
    with sl.Graph().as_default():
        fetches, feeds = build(split)
        with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
            return sess.run(fetches, feeds, run_metadata=metadata)
