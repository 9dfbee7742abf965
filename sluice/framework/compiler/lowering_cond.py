"""Lowering of a cond region (see `cond_regions`): a select, or one `jax.lax.cond`.

  select    the ops of both branches are evaluated, the untaken side with liveness False (known
            while tracing) or a traced bool; Merges pick with `jnp.where` and stateful ops write
            only when live (see `lowering`).
  lax.cond  each branch is traced into its own jaxpr with the predicate fixed to its side, and
            one `lax.cond` runs only the taken one. It returns every value the branch computed
            (XLA drops the ones nothing reads; a value of the other branch is zeros and dead),
            their liveness, and the variables and random counters either branch changed, so an
            assignment in a branch happens only when that branch is taken.

It is given a `FrameEvaluator` (the `Lowering` of the region's frame) that evaluates the region's
units; it never imports `lowering`.
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sluice.framework.compiler.buffers import StackBuffer
from sluice.framework.compiler.cond_regions import CondRegion
from sluice.framework.compiler.evaluator import FrameEvaluator
from sluice.framework.compiler.frame import Frame, KernelTraceError, NotLowerable
from sluice.framework.compiler.liveness import is_concrete, live_and, live_not, live_or
from sluice.framework.ir.graph import Operation, Tensor


def lower_cond_region(
    region: CondRegion,
    evaluator: FrameEvaluator,
    frame: Frame,
    env: dict,
    op_live: dict,
    iteration: Any,
    pushes: dict,
    only: set | None = None,
) -> None:
    """Evaluates the region into `env` and `op_live`, as a select or as one lax.cond.

    Both ways trace both branches. An op of a branch that cannot be traced with the values the
    run gives (`reshape(x, [7])` of a 4-element x on the branch not taken) makes the region
    NotLowerable: TF1 runs only the taken branch, and so does the interpreter."""
    try:
        _lower(region, evaluator, frame, env, op_live, iteration, pushes, only)
    except KernelTraceError as err:
        raise NotLowerable(
            f"a branch of the cond on {region.pred.name} cannot be traced with these inputs "
            f"(only the taken branch may run): {err.message}"
        ) from err


def _lower(
    region: CondRegion,
    evaluator: FrameEvaluator,
    frame: Frame,
    env: dict,
    op_live: dict,
    iteration: Any,
    pushes: dict,
    only: set | None,
) -> None:
    pred = _predicate(region, env)
    if only is None and pred is not None and region.branchable and not region.cheap:
        value, live = pred
        if live is not False and not is_concrete(value) and np.ndim(value) == 0:
            try:
                _lower_as_lax_cond(region, evaluator, frame, env, op_live, iteration, value, live)
                return
            except _CannotBranch:
                pass
    evaluator.eval_units(region.order, frame, env, op_live, iteration, pushes, only)


def _predicate(region: CondRegion, env: dict) -> tuple | None:
    """(value, liveness) of the predicate: pred_id, or the tensor it is the identity of
    (which the branch pivots switch on when no capture uses pred_id)."""
    if region.pred in env:
        return env[region.pred]
    source = region.pred.op.inputs[0] if region.pred.op.type == "Identity" else None
    return env.get(source) if source is not None else None


class _CannotBranch(Exception):
    """The two branches give values a lax.cond cannot return together: lower as a select."""


# What one branch gives for a tensor: nothing (dead), a value known while tracing, or traced
# leaves among the branch jaxpr's outputs.
class _Dead(NamedTuple):
    pass


class _Known(NamedTuple):
    value: Any


class _Traced(NamedTuple):
    treedef: Any  # the value's pytree structure...
    indices: tuple  # ...and where its leaves are among the branch jaxpr's outputs


_DEAD = _Dead()
_Value = _Dead | _Known | _Traced


# Where one branch takes a lax.cond output from: its jaxpr's output, a constant, or zeros (the
# branch gives no value there: the output is dead on that side).
class _FromOutput(NamedTuple):
    index: int


class _FromConstant(NamedTuple):
    value: Any


class _Zeros(NamedTuple):
    pass


_Source = _FromOutput | _FromConstant | _Zeros


# How the layout gives a tensor after the region: one value known while tracing, or the
# lax.cond outputs that hold its leaves.
class _StaticValue(NamedTuple):
    value: Any


class _SlotsValue(NamedTuple):
    treedef: Any
    slots: list


class _StaticLive(NamedTuple):
    """A liveness known while tracing on each side of the cond."""

    if_false: bool
    if_true: bool


# A piece of state a branch may change: a variable (by handle) or a random op's counter.
class _VariableKey(NamedTuple):
    handle: str


class _CounterKey(NamedTuple):
    op_name: str


@dataclasses.dataclass
class _Branch:
    """One branch traced with its predicate fixed: its jaxpr, and what each output of it is."""

    jaxpr: Any  # a ClosedJaxpr with no inputs
    values: dict  # Tensor -> _Value
    lives: dict  # Tensor or Operation -> a bool known while tracing, or an output index
    state: dict  # _VariableKey or _CounterKey -> output index


def _lower_as_lax_cond(
    region: CondRegion,
    evaluator: FrameEvaluator,
    frame: Frame,
    env: dict,
    op_live: dict,
    iteration: Any,
    pred: Any,
    pred_live: Any,
) -> None:
    branches = [
        _trace_branch(region, evaluator, frame, env, op_live, iteration, side, pred_live)
        for side in (0, 1)
    ]
    layout = _Layout(branches, evaluator.trace)
    results = jax.lax.cond(
        pred, layout.branch_fn(1), layout.branch_fn(0), [branch.jaxpr.consts for branch in branches]
    )
    layout.bind(results, pred, env, op_live, evaluator)


def _trace_branch(
    region: CondRegion,
    evaluator: FrameEvaluator,
    frame: Frame,
    env: dict,
    op_live: dict,
    iteration: Any,
    side: int,
    pred_live: Any,
) -> _Branch:
    """Traces the region's ops with the predicate fixed to `side` (1: true) into a jaxpr. The
    branch pivots say which side is live, so the other side's ops are dead and cost nothing."""
    ctx = evaluator.trace
    saved_vars, saved_counts = ctx.variables, ctx.random_counts
    fixed = np.bool_(side)
    overrides, live_overrides = {region.pred: (fixed, pred_live)}, {}
    for branch, branch_ctx in region.contexts.items():
        if branch_ctx.pivot is None:
            continue  # a gradient branch builds its pivot only for an op with no input
        live = pred_live if branch == side else False
        overrides[branch_ctx.pivot] = (fixed, live)
        live_overrides[branch_ctx.pivot.op] = live
    record = _Branch(None, {}, {}, {})

    def run() -> list:
        ctx.variables, ctx.random_counts = dict(saved_vars), dict(saved_counts)
        branch_env = collections.ChainMap({}, overrides, env)  # writes go to the first map
        branch_live = collections.ChainMap({}, live_overrides, op_live)
        pushes: dict = {}
        evaluator.eval_units(region.order, frame, branch_env, branch_live, iteration, pushes)
        assert not pushes, "can_branch keeps stack pushes out of a lax.cond"
        outputs: list = []
        for t, (value, live) in branch_env.maps[0].items():
            record.values[t] = _value_of(value, outputs)
            record.lives[t] = _live_of(live, outputs)
        for op, live in branch_live.maps[0].items():
            record.lives[op] = _live_of(live, outputs)
        for key, now in _changed_state(ctx, saved_vars, saved_counts):
            record.state[key] = len(outputs)
            outputs.append(now)
        return outputs

    try:
        record.jaxpr = jax.make_jaxpr(run)()
    finally:
        ctx.variables, ctx.random_counts = saved_vars, saved_counts
    return record


def _value_of(value: Any, outputs: list) -> _Value:
    if value is None:
        return _DEAD
    if isinstance(value, StackBuffer) and value.static is not None:
        raise _CannotBranch("a stack of values known while tracing")
    if is_concrete(value):
        return _Known(value)
    leaves, treedef = jax.tree_util.tree_flatten(value)
    indices = tuple(range(len(outputs), len(outputs) + len(leaves)))
    outputs.extend(leaves)
    return _Traced(treedef, indices)


def _live_of(live: Any, outputs: list) -> Any:
    if isinstance(live, bool):
        return live
    outputs.append(live)
    return len(outputs) - 1


def _changed_state(ctx: Any, saved_vars: dict, saved_counts: dict):
    """(key, value now) of each variable and random counter the branch changed."""
    for handle, value in ctx.variables.items():
        if saved_vars.get(handle) is not value:
            yield _VariableKey(handle), value
    for name, count in ctx.random_counts.items():
        if saved_counts.get(name) is not count:
            yield _CounterKey(name), count


@dataclasses.dataclass
class _Slot:
    """One array the lax.cond returns: where each branch takes it from, and its type."""

    sources: tuple[_Source, ...]  # one per branch
    shape: tuple
    dtype: Any


class _Layout:
    """The lax.cond's outputs: every value, liveness and state either branch produces, as slots
    both branches fill. Values and livenesses known while tracing on both sides stay out of it."""

    def __init__(self, branches: list[_Branch], ctx: Any):
        self.branches = branches
        self.slots: list[_Slot] = []
        self.values: dict = {}  # Tensor -> _StaticValue | _SlotsValue
        self.lives: dict = {}  # Tensor or Operation -> _StaticLive | a slot index
        self.state: dict = {}  # _VariableKey | _CounterKey -> slot index
        for t in _union(b.values for b in branches):
            self.values[t] = self._value(t)
        for key in _union(b.lives for b in branches):
            self.lives[key] = self._live(key)
        for key in _union(b.state for b in branches):
            self.state[key] = self._state(key, ctx)

    def _value(self, t: Tensor) -> _StaticValue | _SlotsValue:
        values = [b.values.get(t, _DEAD) for b in self.branches]
        given = [(side, v) for side, v in enumerate(values) if not isinstance(v, _Dead)]
        if not given:
            return _StaticValue(None)
        if all(isinstance(v, _Known) for _, v in given) and _all_equal([v.value for _, v in given]):
            return _StaticValue(given[0][1].value)  # known while tracing where it is live
        structures = [
            v.treedef if isinstance(v, _Traced) else jax.tree_util.tree_structure(v.value)
            for _, v in given
        ]
        types = [[(a.shape, a.dtype) for a in self._avals(side, v)] for side, v in given]
        if any(s != structures[0] for s in structures) or any(ty != types[0] for ty in types):
            raise _CannotBranch(f"the branches give {t.name} different types")
        indices = []
        for k, (shape, dtype) in enumerate(types[0]):
            sources = tuple(_source(v, k) for v in values)
            indices.append(self._add(_Slot(sources, shape, dtype)))
        return _SlotsValue(structures[0], indices)

    def _avals(self, side: int, value: _Value) -> list:
        if isinstance(value, _Known):
            return [
                jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x))
                for x in jax.tree_util.tree_leaves(value.value)
            ]
        out_avals = self.branches[side].jaxpr.out_avals
        return [out_avals[i] for i in value.indices]

    def _live(self, key: Any) -> _StaticLive | int:
        lives = [b.lives.get(key, False) for b in self.branches]
        if all(isinstance(live, bool) for live in lives):
            return _StaticLive(*lives)
        sources = tuple(
            _FromConstant(np.bool_(live)) if isinstance(live, bool) else _FromOutput(live)
            for live in lives
        )
        return self._add(_Slot(sources, (), np.dtype(bool)))

    def _state(self, key: _VariableKey | _CounterKey, ctx: Any) -> int:
        """A variable or random counter: the branch's new value, or the one before the region."""
        variable = isinstance(key, _VariableKey)
        name = key[0]
        before = ctx.variables.get(name) if variable else ctx.random_counts.get(name, 0)
        if before is None:
            raise _CannotBranch(f"variable {name} is first set inside one branch")
        shape = np.shape(before)
        dtype = jnp.result_type(before) if variable else np.dtype(np.int64)
        sources: list[_Source] = []
        for b in self.branches:
            index = b.state.get(key)
            if index is None:
                sources.append(_FromConstant(before))
                continue
            aval = b.jaxpr.out_avals[index]
            if aval.shape != shape or (variable and aval.dtype != dtype):
                raise _CannotBranch(f"a branch changes the type of {name}")
            sources.append(_FromOutput(index))
        return self._add(_Slot(tuple(sources), shape, dtype))

    def _add(self, slot: _Slot) -> int:
        self.slots.append(slot)
        return len(self.slots) - 1

    def branch_fn(self, side: int):
        """The lax.cond branch for `side`: runs that branch's jaxpr and fills every slot."""
        jaxpr = self.branches[side].jaxpr.jaxpr

        def fn(consts: list) -> list:
            outs = jax.core.eval_jaxpr(jaxpr, consts[side])
            filled = []
            for slot in self.slots:
                source = slot.sources[side]
                if isinstance(source, _Zeros):
                    filled.append(jnp.zeros(slot.shape, slot.dtype))
                else:
                    x = outs[source.index] if isinstance(source, _FromOutput) else source.value
                    filled.append(jnp.asarray(x, slot.dtype))
            return filled

        return fn

    def bind(
        self, results: list, pred: Any, env: dict, op_live: dict, evaluator: FrameEvaluator
    ) -> None:
        """Puts the lax.cond's results where the units after the region read them."""

        def live_of(key: Any) -> Any:
            entry = self.lives.get(key, _StaticLive(False, False))
            if not isinstance(entry, _StaticLive):
                return results[entry]
            return live_or(live_and(pred, entry.if_true), live_and(live_not(pred), entry.if_false))

        for t, entry in self.values.items():
            if isinstance(entry, _StaticValue):
                value = entry.value
            else:
                value = jax.tree_util.tree_unflatten(
                    entry.treedef, [results[i] for i in entry.slots]
                )
            if t not in evaluator.fed:
                env[t] = (value, live_of(t))
        for key in self.lives:
            if isinstance(key, Operation):
                op_live[key] = live_of(key)
        for key, index in self.state.items():
            states = (
                evaluator.trace.variables
                if isinstance(key, _VariableKey)
                else evaluator.trace.random_counts
            )
            states[key[0]] = results[index]


def _source(value: _Value, k: int) -> _Source:
    """Where a branch takes leaf `k` of a value from."""
    if isinstance(value, _Dead):
        return _Zeros()
    if isinstance(value, _Traced):
        return _FromOutput(value.indices[k])
    return _FromConstant(jax.tree_util.tree_leaves(value.value)[k])


def _union(dicts) -> list:
    keys: dict = {}
    for d in dicts:
        keys.update(dict.fromkeys(d))
    return list(keys)


def _all_equal(values: list) -> bool:
    """Values known while tracing that are the same arrays (same structure, dtypes, contents)."""
    first = values[0]
    for v in values[1:]:
        a, b = jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(v)
        if v is first:
            continue
        if jax.tree_util.tree_structure(first) != jax.tree_util.tree_structure(v) or any(
            np.shape(x) != np.shape(y)
            or jnp.result_type(x) != jnp.result_type(y)
            or not np.array_equal(x, y)
            for x, y in zip(a, b)
        ):
            return False
    return True
