"""TensorBoard's protocol buffers, from tensorboardX (the optional extra sluice[tensorboard]).

tensorboardX ships TensorBoard's own `.proto` files compiled for Python (Summary, Event,
GraphDef, ...) and a TFRecord writer, in pure Python over protobuf: what writing event files
needs, without TensorFlow or the much larger tensorboard package. It is imported only when a
summary is fetched or a FileWriter made, so graphs with summary ops build without it.
"""

from __future__ import annotations

import functools
import types

from sluice._export import export_lazy

# The proto classes `sl.summary` names, by the proto module that defines them.
PROTO_CLASSES = {
    "Summary": "summary",
    "SummaryDescription": "summary",
    "Event": "event",
    "SessionLog": "event",
    "TaggedRunMetadata": "event",
}

_INSTALL = "pip install sluice[tensorboard] (or pip install tensorboardX)"


def protos(why: str) -> types.SimpleNamespace:
    """The proto modules; `why` says in the error what needed them.

    Raises:
      ImportError: tensorboardX is not installed.
    """
    try:
        from tensorboardX.proto import (
            attr_value_pb2,
            event_pb2,
            graph_pb2,
            node_def_pb2,
            summary_pb2,
            tensor_pb2,
            tensor_shape_pb2,
            types_pb2,
            versions_pb2,
        )
    except ImportError as err:
        raise ImportError(f"{why} needs tensorboardX, which is not installed: {_INSTALL}.") from err
    return types.SimpleNamespace(
        attr_value=attr_value_pb2,
        event=event_pb2,
        graph=graph_pb2,
        node_def=node_def_pb2,
        summary=summary_pb2,
        tensor=tensor_pb2,
        tensor_shape=tensor_shape_pb2,
        types=types_pb2,
        versions=versions_pb2,
    )


def record_writer(path: str):
    """tensorboardX's TFRecord writer for `path` (the framing TensorBoard reads: length,
    masked CRC32C of the length, data, masked CRC32C of the data)."""
    try:
        from tensorboardX.record_writer import RecordWriter
    except ImportError as err:
        raise ImportError(
            f"sl.summary.FileWriter needs tensorboardX, which is not installed: {_INSTALL}."
        ) from err
    return RecordWriter(path)


def proto_class(name: str) -> type:
    """`sl.summary.<name>`, one of `PROTO_CLASSES`, imported from tensorboardX.

    Raises:
      ImportError: tensorboardX is not installed.
    """
    return getattr(getattr(protos(f"sl.summary.{name}"), PROTO_CLASSES[name]), name)


# sl.summary.Summary, ...: loaded from tensorboardX when first looked up
for _name in PROTO_CLASSES:
    export_lazy(f"summary.{_name}", functools.partial(proto_class, _name))

# TF1's attr_value_pb2.AttrValue, which TF1 code passes to `Operation._set_attr`
export_lazy(
    "core.framework.attr_value_pb2.AttrValue",
    lambda: protos("attr_value_pb2.AttrValue").attr_value.AttrValue,
)
