"""`sl.contrib.legacy_seq2seq`: TF1's list-of-steps decoder and sequence losses.

Every sequence here is a Python list with one [batch, ...] Tensor per time step, as in
`static_rnn`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice._export import export
from sluice._tf1.cells import scopes as vs
from sluice.framework.ir.graph import Tensor, name_scope
from sluice.framework.ops.array import array_ops, fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, reduction_ops
from sluice.framework.ops.nn import loss_ops

# Added to the summed weights before dividing, so all-zero weights give 0, not NaN (as TF1).
_EPSILON = 1e-12


@export("contrib.legacy_seq2seq.rnn_decoder")
def rnn_decoder(
    decoder_inputs: list[Any],
    initial_state: Any,
    cell: Any,
    loop_function: Callable[[Tensor, int], Tensor] | None = None,
    scope: Any = None,
) -> tuple[list[Any], Any]:
    """Runs `cell` over `decoder_inputs` from `initial_state` (TF1
    `tf.contrib.legacy_seq2seq.rnn_decoder`).

    Semantics::

        state, prev, outputs = initial_state, None, []
        for i, x in enumerate(decoder_inputs):
            if loop_function is not None and prev is not None:
                x = loop_function(prev, i)       # e.g. embed the argmax of the last output
            output, state = cell(x, state)       # one set of weights for every step
            outputs.append(output)
            prev = output
        return outputs, state

    Args:
      decoder_inputs: a non-empty list of [batch, depth] Tensors.
      initial_state: the cell's initial state.
      cell: an RNNCell.
      loop_function: optional `f(prev_output, i) -> next input`, used from step 1 on (only the
        first decoder input is read then). It runs in the variable scope "loop_function" with
        reuse on, so it may only read variables created before.
      scope: the variable scope (default "rnn_decoder").

    Returns:
      (outputs, state): the list of per-step outputs and the final state.

    Raises:
      TypeError: `decoder_inputs` is not a list.
      ValueError: `decoder_inputs` is empty.

    >>> cell = sl.nn.rnn_cell.BasicRNNCell(3)
    >>> xs = [sl.zeros([2, 4]) for _ in range(3)]
    >>> outputs, state = rnn_decoder(xs, cell.zero_state(2, sl.float32), cell)
    >>> len(outputs), state.shape
    (3, TensorShape([2, 3]))
    """
    _check_steps("rnn_decoder", "decoder_inputs", decoder_inputs)
    with vs.variable_scope(scope or "rnn_decoder") as varscope:
        state, prev, outputs = initial_state, None, []
        for i, x in enumerate(decoder_inputs):
            if loop_function is not None and prev is not None:
                with vs.variable_scope("loop_function", reuse=True):
                    x = loop_function(prev, i)
            if i > 0:
                varscope.reuse_variables()
            output, state = cell(x, state)
            outputs.append(output)
            if loop_function is not None:
                prev = output
    return outputs, state


def _check_steps(fn: str, what: str, steps: Any) -> None:
    if not isinstance(steps, (list, tuple)):
        raise TypeError(
            f"{fn}: {what} must be a list with one Tensor per time step, got "
            f"{type(steps).__name__}."
        )
    if not steps:
        raise ValueError(f"{fn}: {what} must not be empty.")


@export("contrib.legacy_seq2seq.sequence_loss_by_example")
def sequence_loss_by_example(
    logits: list[Any],
    targets: list[Any],
    weights: list[Any],
    average_across_timesteps: bool = True,
    softmax_loss_function: Callable[..., Tensor] | None = None,
    name: str | None = None,
) -> Tensor:
    """The weighted cross-entropy of each example, summed over steps (TF1
    `tf.contrib.legacy_seq2seq.sequence_loss_by_example`).

    Semantics, for lists of per-step [batch, classes] logits, [batch] int targets and [batch]
    weights::

        loss = sum_t xent(logits[t], targets[t]) * weights[t]          # [batch]
        if average_across_timesteps:
            loss /= sum_t weights[t] + 1e-12

    Args:
      logits: a list of [batch, num_classes] Tensors.
      targets: a list (as long) of int Tensors [batch] (any shape with `batch` entries).
      weights: a list (as long) of float Tensors [batch].
      average_across_timesteps: divide by the summed weights of each example.
      softmax_loss_function: `f(labels=, logits=) -> [batch]` used in place of sparse softmax
        cross-entropy.
      name: the name scope (default "sequence_loss_by_example").

    Returns:
      A [batch] Tensor: the log-perplexity of each example.

    Raises:
      ValueError: the three lists differ in length.

    >>> logits = [sl.zeros([2, 4]) for _ in range(3)]
    >>> targets = [sl.constant([0, 1]) for _ in range(3)]
    >>> weights = [sl.ones([2]) for _ in range(3)]
    >>> loss = sequence_loss_by_example(logits, targets, weights)
    >>> [round(v, 4) for v in sl.Session().run(loss).tolist()]
    [1.3863, 1.3863]
    """
    _check_steps("sequence_loss_by_example", "logits", logits)
    if len(targets) != len(logits) or len(weights) != len(logits):
        raise ValueError(
            "Lengths of logits, weights, and targets must be the same "
            f"{len(logits)}, {len(weights)}, {len(targets)}."
        )
    with name_scope(name, "sequence_loss_by_example"):
        per_step = []
        for logit, target, weight in zip(logits, targets, weights):
            if softmax_loss_function is None:
                target = array_ops.reshape(target, [-1])
                crossent = loss_ops.sparse_softmax_cross_entropy_with_logits(
                    labels=target, logits=logit
                )
            else:
                crossent = softmax_loss_function(labels=target, logits=logit)
            per_step.append(math_ops.multiply(crossent, weight))
        log_perps = math_ops.add_n(per_step)
        if average_across_timesteps:
            total_size = math_ops.add(math_ops.add_n(list(weights)), _EPSILON)
            log_perps = math_ops.truediv(log_perps, total_size)
    return log_perps


@export("contrib.legacy_seq2seq.sequence_loss")
def sequence_loss(
    logits: list[Any],
    targets: list[Any],
    weights: list[Any],
    average_across_timesteps: bool = True,
    average_across_batch: bool = True,
    softmax_loss_function: Callable[..., Tensor] | None = None,
    name: str | None = None,
) -> Tensor:
    """The weighted cross-entropy of a batch of sequences, a scalar (TF1
    `tf.contrib.legacy_seq2seq.sequence_loss`).

    Semantics: `sum(sequence_loss_by_example(...))`, divided by the batch size (the first
    dimension of `targets[0]`) when `average_across_batch`.

    Args:
      logits, targets, weights, average_across_timesteps, softmax_loss_function: as in
        `sequence_loss_by_example`.
      average_across_batch: divide the summed cost by the batch size.
      name: the name scope (default "sequence_loss").

    Returns:
      A scalar Tensor.

    Raises:
      ValueError: the three lists differ in length.

    >>> logits = [sl.zeros([2, 4]) for _ in range(3)]
    >>> targets = [sl.constant([0, 1]) for _ in range(3)]
    >>> weights = [sl.ones([2]) for _ in range(3)]
    >>> round(float(sl.Session().run(sequence_loss(logits, targets, weights))), 4)
    1.3863
    """
    with name_scope(name, "sequence_loss"):
        cost = reduction_ops.reduce_sum(
            sequence_loss_by_example(
                logits,
                targets,
                weights,
                average_across_timesteps=average_across_timesteps,
                softmax_loss_function=softmax_loss_function,
            )
        )
        if average_across_batch:
            first = core_ops.convert_to_tensor(targets[0])
            batch_size = fill_ops.cast(fill_ops.shape(first)[0], cost.dtype)
            return math_ops.truediv(cost, batch_size)
        return cost
