"""Error classes mirroring TensorFlow 1.x's `tf.errors`.

Errors raised while a graph is *built* are plain `ValueError`/`TypeError` (as in TF1); errors raised
while it *runs* are `OpError` subclasses naming the op that failed.
"""

from __future__ import annotations

from typing import Any

from sluice._export import export


@export("errors.OpError")
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


@export("errors.CancelledError")
class CancelledError(OpError):
    pass


@export("errors.UnknownError")
class UnknownError(OpError):
    pass


@export("errors.InvalidArgumentError")
class InvalidArgumentError(OpError):
    pass


@export("errors.DeadlineExceededError")
class DeadlineExceededError(OpError):
    pass


@export("errors.NotFoundError")
class NotFoundError(OpError):
    pass


@export("errors.AlreadyExistsError")
class AlreadyExistsError(OpError):
    pass


@export("errors.PermissionDeniedError")
class PermissionDeniedError(OpError):
    pass


@export("errors.ResourceExhaustedError")
class ResourceExhaustedError(OpError):
    pass


@export("errors.FailedPreconditionError")
class FailedPreconditionError(OpError):
    pass


@export("errors.AbortedError")
class AbortedError(OpError):
    pass


@export("errors.OutOfRangeError")
class OutOfRangeError(OpError):
    pass


@export("errors.UnimplementedError")
class UnimplementedError(OpError):
    pass


@export("errors.InternalError")
class InternalError(OpError):
    pass


@export("errors.UnavailableError")
class UnavailableError(OpError):
    pass


@export("errors.DataLossError")
class DataLossError(OpError):
    pass
