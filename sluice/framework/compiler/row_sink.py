"""Rows a loop pass writes itself into a loop's buffers of saved values (`RowSink`).

A loop of exactly its bound saves each stack push's value as one row per iteration of a buffer
it carries (`loop_passes.scan_into_unwritten`), written after the iteration's ops: the value is
computed into an array of its own, then copied into the buffer, one XLA kernel per push. A pass
whose kernel can write its results straight into those buffers (`fused_lstm_cell`: the gates
and tanh(c) that the gradient's stacks save) takes them from the frame's sink while the
iteration is traced, and gives back the updated buffers; the loop carries those on, with no
copy for those pushes. Outside that loop's trace (a `while_loop`, a scan that fills its buffers,
a shape inference) the sink is closed and the pass computes its values as usual.
"""

from __future__ import annotations

from typing import Any


class RowSink:
    """One frame's buffers, open while one iteration of its loop is traced."""

    def __init__(self) -> None:
        self._buffers: dict[str, Any] | None = None
        self.index: Any = None
        self._written: dict[str, Any] = {}

    def open(self, buffers: dict[str, Any], index: Any) -> None:
        """The iteration `index` begins: `buffers` maps each push's name to its buffer."""
        self._buffers, self.index, self._written = buffers, index, {}

    def close(self) -> dict[str, Any]:
        """The iteration ends: the buffers a pass wrote, by push name."""
        written, self._buffers, self.index, self._written = self._written, None, None, {}
        return written

    def buffer(self, push_name: str) -> Any:
        """The buffer of `push_name`'s values to write this iteration's row into, or None (the
        sink is closed, the push has no buffer of its own, or its row is written already)."""
        if self._buffers is None or push_name in self._written:
            return None
        return self._buffers.get(push_name)

    def wrote(self, push_name: str, buffer: Any) -> None:
        """`buffer` is `push_name`'s buffer with this iteration's row written."""
        self._written[push_name] = buffer
