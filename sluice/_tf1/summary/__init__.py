"""The implementation behind the public `sluice.summary`; each public
name is declared on its definition with `@export`."""

from sluice._tf1.summary._protos import PROTO_CLASSES, proto_class

__all__ = ["PROTO_CLASSES", "proto_class"]
