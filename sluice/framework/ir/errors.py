"""Error classes mirroring TensorFlow 1.x's `tf.errors`.

Errors raised while a graph is *built* are plain `ValueError`/`TypeError` (as in TF1); errors raised
while it *runs* are `OpError` subclasses naming the op that failed.
"""

from __future__ import annotations

from typing import Any


class OpError(Exception):
    """A failure while running a graph; `op` is the Operation at fault (or None)."""

    def __init__(self, node_def: Any, op: Any, message: str):
        super().__init__(message)
        self.node_def = node_def
        self.op = op
        self.message = message

    def __str__(self) -> str:
        if self.op is not None:
            return f"{self.message}\n\t [[node {self.op.name} (op {self.op.type})]]"
        return self.message


class CancelledError(OpError):
    pass


class UnknownError(OpError):
    pass


class InvalidArgumentError(OpError):
    pass


class DeadlineExceededError(OpError):
    pass


class NotFoundError(OpError):
    pass


class AlreadyExistsError(OpError):
    pass


class PermissionDeniedError(OpError):
    pass


class ResourceExhaustedError(OpError):
    pass


class FailedPreconditionError(OpError):
    pass


class AbortedError(OpError):
    pass


class OutOfRangeError(OpError):
    pass


class UnimplementedError(OpError):
    pass


class InternalError(OpError):
    pass


class UnavailableError(OpError):
    pass


class DataLossError(OpError):
    pass
