"""The `ApplyUpdates` op: one optax step over a group of variables, and the naming of its state.

    new_params..., new_state... = ApplyUpdates([learning_rate], grads..., params..., state...,
                                               [slice indices...])

A variable whose gradient is an IndexedSlices applied by rows (TF1's sparse updates, see
`sparse_rows`) gets the slices' values as its gradient and their indices at the end.

The kernel is pure: it rebuilds the optimizer's optax transformation (the learning rate may be a
traced value), unflattens the state leaves, calls `tx.update` and `optax.apply_updates`, and
returns the new values, which the optimizer writes back with one `AssignVariableOp` per variable.
Both engines therefore see ordinary reads and assignments (the compiled engine donates the
written buffers), and the whole step is one jitted function per shape signature.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import optax

from sluice._keras.optimizers import sparse_rows
from sluice.framework.ir import dtypes
from sluice.framework.ir.registry import not_differentiable, register_op
from sluice.framework.ir.tensor_shape import TensorShape

TransformFn = Callable[[Any], optax.GradientTransformation]


class UpdateRule:
    """What one ApplyUpdates op computes: an optax transformation over named parameters.

    Args:
      transform: `learning_rate -> GradientTransformation` (the rate is a traced scalar, or None
        when the transformation carries its own schedule).
      param_names: the variables' graph names, in the op's input order.
      state_treedef: the structure of `transform(...).init(params)` over a dict of those names.
      takes_learning_rate: whether the op's first input is the learning rate.
      sparse_rows: {position of a variable updated by rows: positions of its state leaves (of its
        shape), which are updated at the same rows}.
      spec: plain JSON from which the optimizer rebuilds `transform` in another process (its
        class and constructor arguments; see `Optimizer._rule_spec`); None: not saveable.
    """

    def __init__(
        self,
        transform: TransformFn,
        param_names: Sequence[str],
        state_treedef: Any,
        takes_learning_rate: bool,
        sparse_rows: dict[int, tuple[int, ...]] | None = None,
        spec: dict | None = None,
    ):
        self.transform = transform
        self.spec = spec
        self.param_names = tuple(param_names)
        self.state_treedef = state_treedef
        self.takes_learning_rate = takes_learning_rate
        self.sparse_rows = dict(sparse_rows or {})

    def __call__(
        self,
        learning_rate: Any,
        grads: Sequence[Any],
        params: Sequence[Any],
        state_leaves: Sequence[Any],
        indices: Sequence[Any] = (),
    ) -> tuple[list, list]:
        tx = self.transform(learning_rate)
        names = self.param_names
        grads, params, leaves = list(grads), list(params), list(state_leaves)
        full_params, full_leaves, unique = list(params), list(leaves), {}
        for (k, owned), idx in zip(self.sparse_rows.items(), indices):
            unique[k], grads[k] = sparse_rows.rows_of(idx, grads[k], params[k].shape[0])
            params[k] = sparse_rows.take_rows(params[k], unique[k])
            for j in owned:
                leaves[j] = sparse_rows.take_rows(leaves[j], unique[k])
        grads_tree, params_tree = dict(zip(names, grads)), dict(zip(names, params))
        state = jax.tree_util.tree_unflatten(self.state_treedef, leaves)
        updates, new_state = tx.update(grads_tree, state, params_tree)
        new_params = optax.apply_updates(params_tree, updates)
        new_params = [new_params[n] for n in names]
        new_leaves = jax.tree_util.tree_leaves(new_state)
        for k, owned in self.sparse_rows.items():
            new_params[k] = sparse_rows.put_rows(full_params[k], unique[k], new_params[k])
            for j in owned:
                new_leaves[j] = sparse_rows.put_rows(full_leaves[j], unique[k], new_leaves[j])
        return (
            new_params,
            [new.astype(old.dtype) for new, old in zip(new_leaves, state_leaves)],
        )

    def __repr__(self) -> str:
        return f"UpdateRule({len(self.param_names)} params)"


def _apply_updates_infer(op) -> list:
    rule: UpdateRule = op.get_attr("rule")
    n = len(rule.param_names)
    inputs = list(op.inputs)
    if rule.takes_learning_rate:
        lr, inputs = inputs[0], inputs[1:]
        if not dtypes.is_floating(lr.dtype) or lr.shape.rank not in (None, 0):
            raise TypeError(
                f"the learning rate must be a floating scalar, got {lr.dtype.name}{lr.shape}"
            )
    n_sparse = len(rule.sparse_rows)
    if len(inputs) < 2 * n + n_sparse:
        raise ValueError(f"expected {n} gradients and {n} parameters, got {len(inputs)} inputs")
    grads, params = inputs[:n], inputs[n : 2 * n]
    state, indices = inputs[2 * n : len(inputs) - n_sparse], inputs[len(inputs) - n_sparse :]
    for k, idx in zip(rule.sparse_rows, indices):
        g, p = grads[k], params[k]
        if idx.dtype not in (dtypes.int32, dtypes.int64) or idx.shape.rank not in (None, 1):
            raise TypeError(
                f"the slice indices for {rule.param_names[k]} must be an int vector, "
                f"got {idx.dtype.name}{idx.shape}"
            )
        tail = None if p.shape.rank is None else [None, *p.shape.dims[1:]]
        if g.dtype != p.dtype or not g.shape.is_compatible_with(TensorShape(tail)):
            raise ValueError(
                f"the gradient slices for {rule.param_names[k]} are {g.dtype.name}{g.shape}, "
                f"but the variable is {p.dtype.name}{p.shape}"
            )
    for k, (name, g, p) in enumerate(zip(rule.param_names, grads, params)):
        if k in rule.sparse_rows:
            continue
        if g.dtype != p.dtype or not g.shape.is_compatible_with(p.shape):
            raise ValueError(
                f"the gradient for {name} is {g.dtype.name}{g.shape}, but the variable is "
                f"{p.dtype.name}{p.shape}"
            )
    return [(t.dtype, t.shape) for t in params + state]


def _apply_updates_kernel(*inputs, rule: UpdateRule, **_):
    lr = None
    if rule.takes_learning_rate:
        lr, inputs = inputs[0], inputs[1:]
    n, n_sparse = len(rule.param_names), len(rule.sparse_rows)
    state, indices = inputs[2 * n : len(inputs) - n_sparse], inputs[len(inputs) - n_sparse :]
    new_params, new_state = rule(lr, inputs[:n], inputs[n : 2 * n], state, indices)
    outputs = new_params + new_state
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


register_op("ApplyUpdates", infer=_apply_updates_infer, kernel=_apply_updates_kernel)
not_differentiable("ApplyUpdates")


def state_leaf_names(state: Any, param_names: Sequence[str]) -> list[tuple[str | None, str]]:
    """(parameter name or None, field path) for every leaf of an optax state, in leaf order.

    A leaf inside the per-parameter tree of a state field (e.g. `ScaleByAdamState.mu["w"]`) gets
    ("w", "mu"); a shared leaf gets (None, "count"). Chain positions are dropped unless two leaves
    would get the same name; then every field path keeps them ("0/count", "1/count").
    """
    params = set(param_names)
    paths = [path for path, _ in jax.tree_util.tree_flatten_with_path(state)[0]]

    def name(path, keep_index: bool) -> tuple[str | None, str]:
        param, parts = None, []
        for key in path:
            if isinstance(key, jax.tree_util.DictKey) and key.key in params and param is None:
                param = key.key
            elif isinstance(key, jax.tree_util.GetAttrKey):
                parts.append(key.name)
            elif isinstance(key, jax.tree_util.DictKey):
                parts.append(str(key.key))
            elif keep_index:
                parts.append(str(getattr(key, "idx", key)))
        return param, "/".join(parts) or "state"

    names = [name(p, keep_index=False) for p in paths]
    if len(set(names)) != len(names):
        names = [name(p, keep_index=True) for p in paths]
    return names
