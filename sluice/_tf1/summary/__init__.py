"""The implementation behind the public `sluice.summary`
(see sluice/summary/__init__.py)."""

from sluice._tf1.summary._protos import PROTO_CLASSES, proto_class

__all__ = ["PROTO_CLASSES", "proto_class"]
