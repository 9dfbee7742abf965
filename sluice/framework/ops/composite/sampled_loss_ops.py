"""Sampled losses over a large output vocabulary (TF1 `tf.nn.sampled_softmax_loss`, `nce_loss`).

Both score the true classes and `num_sampled` sampled classes only, as TF1's
`_compute_sampled_logits` does:

    logits  = [inputs . w[true] + b[true],  inputs . w[sampled] + b[sampled]]  - log(expected count)
    labels  = [1 / num_true for each true class,  0 for each sampled class]

with an accidental hit (a sampled class equal to one of the row's true classes) pushed to
`-float32 max` when `remove_accidental_hits`. The sampled softmax is a softmax cross-entropy of
these logits; NCE is a sigmoid cross-entropy summed over each row. The draw (by default
`log_uniform_candidate_sampler` with `unique=True`) gets no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sluice._export import export
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.array.gather_ops import where_v2
from sluice.framework.ops.core.core_ops import convert_to_tensor, stop_gradient
from sluice.framework.ops.math import math_ops, matmul_ops, reduction_ops, unary_ops
from sluice.framework.ops.nn import loss_ops
from sluice.framework.ops.random.candidate_sampling_ops import log_uniform_candidate_sampler


def _one_partition(params: Any, what: str) -> Any:
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError(
                f"{what} split into {len(params)} partitions is not supported; pass one Tensor "
                "or Variable (or a list of one)."
            )
        return params[0]
    return params


def compute_sampled_logits(
    weights: Any,
    biases: Any,
    labels: Any,
    inputs: Any,
    num_sampled: int,
    num_classes: int,
    num_true: int = 1,
    sampled_values: Any = None,
    subtract_log_q: bool = True,
    remove_accidental_hits: bool = False,
    seed: int | None = None,
) -> tuple[Tensor, Tensor]:
    """The logits and labels of a sampled loss (see the module text).

    Args:
      weights: a [num_classes, dim] Tensor or Variable (or a list of one).
      biases: a [num_classes] Tensor or Variable (or a list of one).
      labels: an integer [batch_size, num_true] Tensor of target classes.
      inputs: a [batch_size, dim] floating Tensor.
      num_sampled, num_classes, num_true: the sampler's sizes.
      sampled_values: a sampler's `(sampled, true_expected_count, sampled_expected_count)`,
        or None to draw with `log_uniform_candidate_sampler(unique=True)`.
      subtract_log_q: subtract the log of the expected counts.
      remove_accidental_hits: push sampled classes equal to a true class to -float32 max.
      seed: the sampler's op seed.

    Returns:
      `(logits, labels)`, both [batch_size, num_true + num_sampled].
    """
    weights = _one_partition(weights, "weights")
    biases = _one_partition(biases, "biases")
    inputs = convert_to_tensor(inputs, name="inputs")
    labels = convert_to_tensor(labels, name="labels")
    if not dtypes.is_integer(labels.dtype):
        raise TypeError(f"sampled loss: labels must be integers, got {labels.dtype.name}")
    if labels.dtype != dtypes.int64:
        labels = fill_ops.cast(labels, dtypes.int64)
    if labels.shape.rank not in (None, 2) or (
        labels.shape.rank == 2 and labels.shape[1] not in (None, num_true)
    ):
        raise ValueError(
            f"sampled loss: labels must have shape [batch_size, num_true={num_true}], got "
            f"{labels.shape}"
        )
    if inputs.shape.rank not in (None, 2):
        raise ValueError(
            f"sampled loss: inputs must have shape [batch_size, dim], got {inputs.shape}"
        )
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(
            labels, num_true, num_sampled, True, num_classes, seed=seed
        )
    sampled, true_expected, sampled_expected = (stop_gradient(s) for s in sampled_values)
    sampled = fill_ops.cast(sampled, dtypes.int64)
    labels_flat = array_ops.reshape(labels, [-1])

    true_w = gather_ops.gather(weights, labels_flat)  # [batch * num_true, dim]
    sampled_w = gather_ops.gather(weights, sampled)  # [num_sampled, dim]
    true_b = gather_ops.gather(biases, labels_flat)
    sampled_b = gather_ops.gather(biases, sampled)

    dim = inputs.shape[1] if inputs.shape.rank == 2 else None
    true_w = array_ops.reshape(true_w, [-1, num_true, -1 if dim is None else dim])
    true_logits = reduction_ops.reduce_sum(array_ops.expand_dims(inputs, 1) * true_w, 2)
    true_logits += array_ops.reshape(true_b, [-1, num_true])
    sampled_logits = matmul_ops.matmul(inputs, sampled_w, transpose_b=True) + sampled_b

    if remove_accidental_hits:
        sampled_row = array_ops.reshape(sampled, [1, 1, -1])
        hits = math_ops.equal(array_ops.expand_dims(labels, 2), sampled_row)
        hit = reduction_ops.reduce_any(hits, 1)  # [batch, num_sampled]
        lowest = convert_to_tensor(-np.finfo(np.float32).max, dtype=sampled_logits.dtype)
        sampled_logits += where_v2(hit, lowest, fill_ops.zeros_like(sampled_logits))
    if subtract_log_q:
        true_logits -= unary_ops.log(fill_ops.cast(true_expected, true_logits.dtype))
        sampled_logits -= unary_ops.log(fill_ops.cast(sampled_expected, sampled_logits.dtype))
    logits = join_ops.concat([true_logits, sampled_logits], 1)
    out_labels = join_ops.concat(
        [fill_ops.ones_like(true_logits) / num_true, fill_ops.zeros_like(sampled_logits)], 1
    )
    return logits, out_labels


@export("nn.sampled_softmax_loss")
def sampled_softmax_loss(
    weights: Any,
    biases: Any,
    labels: Any,
    inputs: Any,
    num_sampled: int,
    num_classes: int,
    num_true: int = 1,
    sampled_values: Any = None,
    remove_accidental_hits: bool = True,
    partition_strategy: str = "mod",
    name: str = "sampled_softmax_loss",
    seed: int | None = None,
) -> Tensor:
    """The softmax cross-entropy over the true and `num_sampled` sampled classes, a fast
    estimate of the full softmax loss for training (use the full one to evaluate).

    Args: as `compute_sampled_logits`; `partition_strategy` is accepted for TF1 compatibility
      (one partition only).

    Returns:
      A [batch_size] Tensor of per-example losses.
    """
    with graph_lib.name_scope(name, "sampled_softmax_loss", [inputs, labels]):
        logits, targets = compute_sampled_logits(
            weights,
            biases,
            labels,
            inputs,
            num_sampled,
            num_classes,
            num_true=num_true,
            sampled_values=sampled_values,
            subtract_log_q=True,
            remove_accidental_hits=remove_accidental_hits,
            seed=seed,
        )
        return loss_ops.softmax_cross_entropy_with_logits_v2(
            labels=stop_gradient(targets), logits=logits
        )


@export("nn.nce_loss")
def nce_loss(
    weights: Any,
    biases: Any,
    labels: Any,
    inputs: Any,
    num_sampled: int,
    num_classes: int,
    num_true: int = 1,
    sampled_values: Any = None,
    remove_accidental_hits: bool = False,
    partition_strategy: str = "mod",
    name: str = "nce_loss",
) -> Tensor:
    """Noise-contrastive estimation loss: a logistic loss of each true class against the
    sampled ones, summed per example (Gutmann & Hyvarinen; TF1 `tf.nn.nce_loss`).

    Args: as `sampled_softmax_loss` (here `remove_accidental_hits` defaults to False, as TF1).

    Returns:
      A [batch_size] Tensor of per-example losses.
    """
    with graph_lib.name_scope(name, "nce_loss", [inputs, labels]):
        logits, targets = compute_sampled_logits(
            weights,
            biases,
            labels,
            inputs,
            num_sampled,
            num_classes,
            num_true=num_true,
            sampled_values=sampled_values,
            subtract_log_q=True,
            remove_accidental_hits=remove_accidental_hits,
        )
        losses = loss_ops.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits)
        return reduction_ops.reduce_sum(losses, 1)
