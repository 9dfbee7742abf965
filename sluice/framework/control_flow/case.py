"""`case`: a multi-way branch built from nested `cond`s (TF1 `tf.case`)."""

from __future__ import annotations

import functools
from typing import Any, Callable

from sluice._export import export
from sluice.framework.control_flow.cond import cond
from sluice.framework.ir import dtypes
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.ops.array.fill_ops import cast
from sluice.framework.ops.array.join_ops import stack
from sluice.framework.ops.control.assert_ops import Assert
from sluice.framework.ops.core.core_ops import convert_to_tensor
from sluice.framework.ops.math import math_ops, reduction_ops


@export("case")
def case(
    pred_fn_pairs: Any,
    default: Callable[[], Any] | None = None,
    exclusive: bool = False,
    strict: bool = False,
    name: str = "case",
) -> Any:
    """The result of the first `fn` whose `pred` is true, else of `default` (TF1 `tf.case`).

    Semantics, as plain Python (only the chosen function's ops run)::

        def case(pred_fn_pairs, default):
            for pred, fn in pred_fn_pairs:
                if pred:
                    return fn()
            return default()

    Built as `cond(p0, f0, lambda: cond(p1, f1, ... default))`. With `default=None` the last
    pair acts as the default, guarded by assertions that its predicate holds and no other one
    does (TF1). With `exclusive=True` an assertion fails the run when more than one predicate
    is true. A dict is taken in its insertion order.

    Args:
      pred_fn_pairs: a list of (scalar bool Tensor, callable) pairs, or a dict of them.
      default: a callable, or None.
      exclusive: whether at most one predicate may be true.
      strict: passed to `cond` (False unpacks one-element lists).
      name: a name scope for the ops.

    Returns:
      The outputs of the chosen callable.

    Raises:
      TypeError: a pair is not a 2-tuple, a predicate not a bool Tensor, a fn not callable.
      ValueError: no pairs and no default.
      InvalidArgumentError (at run time): `exclusive` and several predicates are true, or no
        default and no predicate is true.

    >>> x = sl.placeholder(sl.int32, [])
    >>> y = sl.case([(x < 0, lambda: sl.constant(-1)), (x > 0, lambda: sl.constant(1))],
    ...             default=lambda: sl.constant(0))
    >>> s = sl.Session()
    >>> [int(s.run(y, {x: v})) for v in (-5, 0, 7)]
    [-1, 0, 1]
    """
    predicates, actions = _pairs(pred_fn_pairs)
    if default is not None and not callable(default):
        raise TypeError(f"sl.case: default must be callable, got {default!r}.")
    with graph_lib.name_scope(name, "case"):
        if default is None:
            if not predicates:
                raise ValueError("sl.case: pred_fn_pairs is empty and there is no default.")
            default = _guarded_last_action(predicates, actions)
            predicates, actions = predicates[:-1], actions[:-1]
        fn = default
        # Built from the last pair outwards, so the first predicate is tested first.
        for predicate, action in reversed(list(zip(predicates, actions))):
            fn = functools.partial(cond, predicate, action, fn, strict=strict)
        if not exclusive:
            return fn()
        with graph_lib.control_dependencies(
            [_assert_at_most_n_true(predicates, 1, "Input error: exclusive=True")]
        ):
            return fn()


def _pairs(pred_fn_pairs: Any) -> tuple[list[Tensor], list[Callable[[], Any]]]:
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    if not isinstance(pred_fn_pairs, (list, tuple)):
        raise TypeError(
            f"sl.case: pred_fn_pairs must be a list or dict, got {type(pred_fn_pairs).__name__}."
        )
    predicates, actions = [], []
    for i, pair in enumerate(pred_fn_pairs):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(
                f"sl.case: each entry in pred_fn_pairs must be a 2-tuple, entry {i} is {pair!r}."
            )
        pred, fn = pair
        if not isinstance(pred, Tensor) or pred.dtype != dtypes.bool_:
            raise TypeError(f"sl.case: pred {i} must be a Tensor of type bool, got {pred!r}.")
        if not callable(fn):
            raise TypeError(f"sl.case: fn for pred {pred.name} must be callable.")
        predicates.append(pred)
        actions.append(fn)
    return predicates, actions


def _assert_at_most_n_true(predicates: list[Tensor], n: int, message: str) -> Operation:
    flags = stack(predicates, name="preds_c")
    true_count = reduction_ops.reduce_sum(cast(flags, dtypes.int32))
    condition = math_ops.less_equal(true_count, convert_to_tensor(n, name="n_true_conds"))
    names = ", ".join(p.name for p in predicates)
    return Assert(
        condition,
        [f"{message}: more than {n} conditions ({names}) evaluated as True:", flags],
        summarize=len(predicates),
    )


def _guarded_last_action(predicates: list[Tensor], actions: list) -> Callable[[], Any]:
    """The last pair's fn, run only when its predicate holds and no earlier one does."""
    last, others = len(predicates) - 1, predicates[:-1]

    def default_action() -> Any:
        guards = [
            Assert(
                predicates[last],
                [
                    "Input error: None of conditions evaluated as True:",
                    stack(predicates, name="preds_c"),
                ],
            )
        ]
        if others:
            guards.append(
                _assert_at_most_n_true(
                    others,
                    0,
                    f"Implementation error: selected default action #{last} was called, "
                    "but some of other predicates are True",
                )
            )
        with graph_lib.control_dependencies(guards):
            return actions[last]()

    return default_action
