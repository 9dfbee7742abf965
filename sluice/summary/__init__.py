"""`sl.summary`: TF1's `tf.summary`, summaries for TensorBoard and the writer of its event files.

    loss_summary = sl.summary.scalar("loss", loss)
    sl.summary.histogram("weights", w)
    merged = sl.summary.merge_all()
    with sl.summary.FileWriter("logs/run1", sess.graph) as writer:
        for step in range(steps):
            summary, _ = sess.run([merged, train_op])
            writer.add_summary(summary, step)

Fetching a summary op gives `bytes`, a serialized `Summary` protocol buffer, as in TF1; the
compiled engine computes the values inside its one jitted step and turns them into protos
after it (see `sluice.framework.ops.host.summary_ops`). Writing (and fetching) summaries needs the
optional extra `pip install sluice[tensorboard]` (tensorboardX); building the graph does not.
`Summary`, `Event`, `SessionLog`, `TaggedRunMetadata` and `SummaryDescription` are
TensorBoard's proto classes, as in `tf.summary`.
"""

from __future__ import annotations

from typing import Any

from sluice._tf1 import summary as _impl
from sluice._tf1.summary import decode  # noqa: F401  (decode registers the fetch converters)
from sluice._tf1.summary.ops import audio, histogram, image, merge, merge_all, scalar, text
from sluice._tf1.summary.writer import FileWriter, FileWriterCache

__all__ = [
    "scalar",
    "histogram",
    "image",
    "audio",
    "text",
    "merge",
    "merge_all",
    "FileWriter",
    "FileWriterCache",
    "Summary",
    "SummaryDescription",
    "Event",
    "SessionLog",
    "TaggedRunMetadata",
]


def __getattr__(name: str) -> Any:
    """The proto classes, imported from tensorboardX when first asked for."""
    if name in _impl.PROTO_CLASSES:
        return _impl.proto_class(name)
    raise AttributeError(f"module 'sluice.summary' has no attribute {name!r}")
