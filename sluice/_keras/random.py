"""`keras.random`: `SeedGenerator` and the random functions Keras 3 adds to TF1's `sl.random`.

Keras's random functions are stateless: a draw is a pure function of a seed of two ints. The
`seed` argument decides which (Keras 3's rule, `keras/src/random/seed_generator.py`):

  * a `SeedGenerator`: its next seed; every call draws new numbers, reproducibly from the
    generator's own seed;
  * an int `s`: the seed `[s, 0]`, so every call draws the same numbers;
  * None: the next seed of a global `SeedGenerator` (made again by each
    `sl.utils.set_random_seed`).

`sl.random.normal`, `uniform`, `truncated_normal`, `shuffle`, `gamma` and `categorical` are TF1's
functions and Keras's at once: with a `SeedGenerator` they follow the rule above; with an int or
None they keep TF1's (stateful ops, new numbers on every run). `randint`, `dropout`, `binomial`
and `beta` exist only in Keras and follow Keras's rule for every seed.

A generator's state is one value, `[seed, counter]`, a state cell (docs/keras3_state.md) that
every graph reads through its own mirror Variable; outside graphs, `gen.state` stands for it.
Inside a trace (a layer's `call`, a model's step) a draw reads the mirror and advances it,
ordered after the previous draw of the same trace, so each training step draws new numbers;
outside one, a draw reads and advances the value at once. Both continue one sequence, as
Keras's one state variable does, and the state is saved with a model's checkpoints.

Where a draw is made (Keras's rule for any seed, `_KerasStream.draw`): in graph code (a trace,
`with g.as_default()`, or on graph tensors) it is graph ops; elsewhere (a Keras script, a
callback) it is computed at once and returned as an `sl.Array`, as Keras's eager draws are.

>>> gen = sl.random.SeedGenerator(42)
>>> with sl.Graph().as_default():                    # graph code: ops, run by a session
...     a = sl.random.normal((2, 3), seed=gen)
...     b = sl.random.normal((2, 3), seed=gen)      # the next seed: other numbers
...     again = sl.random.normal((2, 3), seed=sl.random.SeedGenerator(42))
...     x, y, z = sl.Session().run([a, b, again])
>>> bool((x == z).all()), bool((x == y).all()), gen.state.numpy().tolist()
(True, False, [42, 2])
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
import random as python_random
import threading
import weakref
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from sluice._export import export
from sluice._keras import config
from sluice._keras.array import as_array
from sluice._keras.utils import rng_utils
from sluice.framework import state_cells, variables
from sluice.framework.ir import concrete, dtypes, tracing
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Graph, Operation, Tensor
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import array_ops, fill_ops, gather_ops, join_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops
from sluice.framework.ops.random import random_dist_ops, random_ops
from sluice.framework.ops.random.seed_stream import SeedStream
from sluice.framework.variables import Variable

_INT32 = 2**32


def _as_int32(value: int) -> int:
    """`value` modulo 2**32, as a signed int32 (Keras's `draw_seed` for an int32 seed dtype)."""
    return (int(value) + 2**31) % _INT32 - 2**31


def make_default_seed() -> int:
    """A seed from Python's `random` (which `sl.utils.set_random_seed` seeds), as Keras draws
    the seed of a generator or initializer created without one."""
    return python_random.randint(1, int(1e9))


_NAMES: dict[str, itertools.count] = {}


def _auto_name(base: str) -> str:
    count = next(_NAMES.setdefault(base, itertools.count()))
    return base if count == 0 else f"{base}_{count}"


@dataclasses.dataclass(eq=False)
class _LastDraw:
    """The last advance of a generator's state that a trace built in one graph; held weakly,
    so that the generator does not keep the graph alive (the graph holds them)."""

    last_advance: weakref.ref[Operation] | None = None
    last_trace: Any = None
    last_context: weakref.ref | None = None  # the cond branch or loop body it was built in


class _KerasStream(SeedStream):
    """A seed stream with Keras's rule for where a draw is made (see `draw`)."""

    def draw(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        """A Keras random function's draw: graph ops inside a trace or on graph tensors; else
        its value at once, an `sl.Array` (Keras's eager draw), built on the arguments' values in
        a scratch graph."""
        return _draw_where_it_belongs(fn, args, kwargs)


@export("random.SeedGenerator")
class SeedGenerator(_KerasStream):
    """Hands out a new seed on each call of a random function (Keras's `SeedGenerator`).

    The state is a Variable of two int32s, `[seed, counter]` (`state`); `next()` returns it and
    adds one to the counter. Two generators made with the same seed give the same sequence of
    draws. A layer that holds a generator lists its state in `layer.variables` and
    `layer.non_trainable_variables` (not in `layer.weights`), as Keras does, so
    `stateless_call` takes it and returns it advanced.

    Args:
      seed: an int, or None for one drawn from Python's `random`.
      name: the generator's name (default "seed_generator", made unique).

    Raises:
      ValueError: `seed` is not an int, or an unknown keyword argument is given.

    >>> class Sampling(sl.layers.Layer):          # the Keras VAE's sampling layer
    ...     def __init__(self, **kwargs):
    ...         super().__init__(**kwargs)
    ...         self.seed_generator = sl.random.SeedGenerator(1337)
    ...     def call(self, inputs):
    ...         mean, log_var = inputs
    ...         eps = sl.random.normal(sl.shape(mean), seed=self.seed_generator)
    ...         return mean + sl.exp(0.5 * log_var) * eps
    >>> x = sl.placeholder(sl.float32, [2, 3])
    >>> z = Sampling()([x, x])
    >>> with sl.Session() as sess:
    ...     sess.run(sl.global_variables_initializer())
    ...     first, second = (sess.run(z, {x: np.zeros((2, 3))}) for _ in range(2))
    >>> bool((first == second).all())                # a new draw on every run
    False
    """

    def __init__(self, seed: int | None = None, name: str | None = None, **kwargs: Any):
        kwargs.pop("backend", None)  # Keras's: sluice has one backend
        if kwargs:
            raise ValueError(f"SeedGenerator: unrecognized keyword arguments {sorted(kwargs)}.")
        self.name = name or _auto_name("seed_generator")
        self._initial_seed = seed
        if seed is None:
            seed = make_default_seed()
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"Argument `seed` must be an integer. Received: seed={seed!r}")
        initial = np.array([_as_int32(seed), 0], np.int32)
        self._cell = state_cells.StateCell(
            f"{self.name}/seed_generator_state",
            dtypes.int32,
            TensorShape([2]),
            lambda: core_ops.constant(initial),
            trainable=False,
        )
        state_cells.set_value(self._cell, jnp.asarray(initial))  # made eagerly, as Keras's
        self._home: Graph | None = None  # the private graph of `state` (made on first use)
        self._last_draws: weakref.WeakKeyDictionary[Graph, _LastDraw] = weakref.WeakKeyDictionary()

    # -- the state ------------------------------------------------------------------------------
    def state_variable(self, graph: Graph | None = None) -> Variable:
        """The generator's state in `graph` (default: the default graph): the mirror there of
        its one state cell (docs/keras3_state.md), a non-trainable int32 Variable `[seed,
        counter]` at the graph's root, named `<path>/seed_generator_state` (the path of the
        layer attribute holding the generator, `dropout/seed_generator`, or its name)."""
        g = graph if graph is not None else graph_lib.get_default_graph()
        return variables.mirror(self._cell, g)

    @property
    def state(self) -> Variable:
        """The state Variable, Keras's `SeedGenerator.state`: outside graphs, `state.numpy()`,
        `state.value` and `state.assign(array)` read and write the one value that every graph's
        mirror shares (like a Keras weight, it stands for its mirror in graph code)."""
        if self._home is None:
            self._home = Graph()
            state_cells.manage(self._home)  # its value is Keras's: read and written host-side
        return self.state_variable(self._home)

    def set_path(self, path: str) -> None:
        """Names the state `<path>/seed_generator_state` in the graphs where it has no mirror
        yet (a layer gives its generators stable names, the paths of its attributes, so that a
        checkpoint of a model restores into the same model built again)."""
        self._cell.path = f"{path}/seed_generator_state"

    def _host_state(self) -> np.ndarray:
        """The state's current value, read outside graphs (from the session that holds it)."""
        with jax.ensure_compile_time_eval():  # a value even inside a jax.jit trace
            return np.array(state_cells.value_of(self._cell), np.int32)

    # -- seeds ----------------------------------------------------------------------------------
    def next(self, ordered: bool = True) -> Tensor:
        """The seed for the next draw, an int32 [2] tensor; advances the state.

        Outside a trace: a constant, the state's current value (which is then advanced, so the
        next draw, outside or inside a trace, continues the sequence). Inside one: the value of
        the state Variable, read after the previous draw of this trace (in the same cond branch
        or loop body) and advanced by an assignment that runs whenever the seed is used.

        Args:
          ordered: True adds one to the counter; False scrambles both ints (Keras's global
            generator: `(state + 1) * 5387 % 933199`).
        """
        if not tracing.is_tracing():
            seed = self._host_state()
            advanced = _advanced_host([int(v) for v in seed], ordered)
            advanced = np.array([_as_int32(v) for v in advanced], np.int32)
            state_cells.set_value(self._cell, jnp.asarray(advanced))
            return core_ops.constant(seed, name="seed")
        g = graph_lib.get_default_graph()
        state = self.state_variable(g)
        record = self._last_draws.setdefault(g, _LastDraw())
        trace, context = tracing.trace_id(), g.control_flow_context
        last = record.last_advance() if record.last_advance is not None else None
        same_context = (record.last_context() if record.last_context else None) is context
        chained = last is not None and record.last_trace == trace and same_context
        with g.name_scope(self.name):
            with g.control_dependencies([last] if chained else []):
                old = state.read_value()
            with g.control_dependencies([old.op]):
                advance = state.assign(_advanced(old, ordered), read_value=False)
            with g.control_dependencies([advance]):
                seed = core_ops.identity(old, name="seed")
        record.last_advance, record.last_trace = weakref.ref(advance), trace
        record.last_context = weakref.ref(context) if context is not None else None
        return seed

    # -- config ---------------------------------------------------------------------------------
    def get_config(self) -> dict:
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> SeedGenerator:
        return cls(**config)

    def __repr__(self) -> str:
        return f"<SeedGenerator name={self.name} seed={self._initial_seed}>"


def generators_of(obj: Any) -> list[tuple[str, SeedGenerator]]:
    """(attribute name, generator) for the SeedGenerators `obj` holds in its attributes (or in
    lists and tuples there), in assignment order: what a layer tracks as Keras's layers do."""
    found, seen = [], set()
    for key, value in vars(obj).items():
        items = value if isinstance(value, (list, tuple)) else [value]
        for i, item in enumerate(items):
            if isinstance(item, SeedGenerator) and id(item) not in seen:
                seen.add(id(item))
                found.append((key if item is value else f"{key}_{i}", item))
    return found


_EVALUATING = threading.local()  # a draw computed now is being built (its nested draws too)


def _draw_where_it_belongs(fn: Callable, args: tuple, kwargs: dict) -> Any:
    """`fn(*args, **kwargs)` as graph ops in graph code: inside a trace, inside `with
    g.as_default()` (TF1 code, a weight's initializer), or on graph tensors; else its value,
    computed now in a scratch graph, as an `sl.Array` (Keras's eager draw)."""
    if (
        tracing.is_tracing()
        or getattr(_EVALUATING, "depth", 0)
        or graph_lib.entered_default_graph() is not None
        or any(_is_symbolic(x) for x in jax.tree_util.tree_leaves((args, kwargs)))
    ):
        return fn(*args, **kwargs)
    args, kwargs = jax.tree_util.tree_map(_value_of, (args, kwargs))
    _EVALUATING.depth = getattr(_EVALUATING, "depth", 0) + 1
    try:
        with Graph().as_default(), jax.ensure_compile_time_eval():
            result = fn(*args, **kwargs)
            return as_array(concrete.concrete_value(result))
    finally:
        _EVALUATING.depth -= 1


def _is_symbolic(x: Any) -> bool:
    """A graph tensor whose value a run decides, or a Variable (TF1's, or a Keras weight in
    graph code): the draw is then graph ops on it."""
    if isinstance(x, Tensor):
        return not concrete.is_concrete(x)
    return isinstance(x, Variable) or hasattr(x, "_as_tensor")


def _value_of(x: Any) -> Any:
    return np.asarray(concrete.concrete_value(x)) if isinstance(x, Tensor) else x


def _advanced_host(state: list[int], ordered: bool) -> list[int]:
    if ordered:
        return [state[0], state[1] + 1]
    return [(v + 1) * 5387 % 933199 for v in state]


def _advanced(old: Tensor, ordered: bool) -> Tensor:
    if ordered:
        return math_ops.add(old, core_ops.constant(np.array([0, 1], np.int32)))
    wide = fill_ops.cast(old, dtypes.int64) + core_ops.constant(np.int64(1))
    scrambled = math_ops.floormod(wide * np.int64(5387), np.int64(933199))
    return fill_ops.cast(scrambled, dtypes.int32)


class _FixedSeed(_KerasStream):
    """An int seed as Keras uses it: the same seed `[seed, 0]` for every draw."""

    def __init__(self, seed: int):
        self.seed = _as_int32(seed)

    def next(self, ordered: bool = True) -> Tensor:
        return core_ops.constant(np.array([self.seed, 0], np.int32), name="seed")


_GLOBAL: dict[str, Any] = {"generator": None, "made_after": None}


def global_seed_generator() -> SeedGenerator:
    """The generator behind `seed=None` (Keras's global SeedGenerator), made again after each
    `sl.utils.set_random_seed` (its seed then comes from the Python `random` that it seeded)."""
    times = rng_utils.times_set()
    if _GLOBAL["generator"] is None or _GLOBAL["made_after"] != times:
        _GLOBAL["generator"] = SeedGenerator(name=_auto_name("global_seed_generator"))
        _GLOBAL["made_after"] = times
    return _GLOBAL["generator"]


class _GlobalSeed(_KerasStream):
    def next(self, ordered: bool = True) -> Tensor:
        return global_seed_generator().next(ordered=False)


def seed_stream(seed: Any) -> SeedStream:
    """The stream a Keras `seed` argument names (an int, a SeedGenerator or None; see the module
    docstring).

    Raises:
      ValueError: any other kind of seed.
    """
    if isinstance(seed, SeedStream):
        return seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return _FixedSeed(int(seed))
    if seed is None:
        return _GlobalSeed()
    raise ValueError(
        "Argument `seed` must be either an integer or an instance of `SeedGenerator`. "
        f"Received: seed={seed!r} (of type {type(seed).__name__})"
    )


def _dtype(dtype: Any, kind: str, function: str) -> dtypes.DType:
    dtype = dtypes.as_dtype(dtype or config.floatx())
    ok = dtypes.is_floating(dtype) if kind == "float" else dtype in (dtypes.int32, dtypes.int64)
    if not ok:
        raise ValueError(
            f"`keras.random.{function}` requires {'a floating point' if kind == 'float' else 'an'}"
            f"{' integer' if kind == 'int' else ''} `dtype`. Received: dtype={dtype.name}"
        )
    return dtype


def _keras_seeded(fn: Callable) -> Callable:
    """Decorator for a function only Keras has: its `seed` (an int, a generator or None) names
    a Keras stream, which makes the draw (`_KerasStream.draw`)."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        stream = bound.arguments["seed"] = seed_stream(bound.arguments.get("seed"))
        return stream.draw(fn, bound.args, bound.kwargs)

    return wrapper


# -- the functions only Keras has -------------------------------------------------------------
@export("random.randint")
@_keras_seeded
def randint(shape: Any, minval: Any, maxval: Any, dtype: Any = "int32", seed: Any = None) -> Tensor:
    """Integers drawn uniformly from `[minval, maxval)` (Keras's `keras.random.randint`).

    Args:
      shape: the output shape.
      minval, maxval: the bounds, scalars.
      dtype: int32 or int64.
      seed: an int, a `SeedGenerator` or None (see the module docstring).

    >>> values = sl.Session().run(sl.random.randint((100,), 3, 6, seed=1))
    >>> sorted(set(values.tolist()))
    [3, 4, 5]
    """
    dtype = _dtype(dtype, "int", "randint")
    return random_ops.random_uniform(
        shape, minval, maxval, dtype=dtype, seed=seed_stream(seed), name="randint"
    )


@export("random.dropout")
@_keras_seeded
def dropout(inputs: Any, rate: float, noise_shape: Any = None, seed: Any = None) -> Tensor:
    """`inputs` with each entry zeroed with probability `rate`, the others scaled by
    `1 / (1 - rate)` (Keras's `keras.random.dropout`).

    Args:
      inputs: a tensor (or array).
      rate: the probability of dropping an entry, in [0, 1).
      noise_shape: the shape of the keep/drop mask, broadcast over `inputs` (None entries take
        the input's dimension); default the input's shape.
      seed: an int, a `SeedGenerator` or None (see the module docstring).

    Raises:
      ValueError: `rate` outside [0, 1).

    >>> y = sl.random.dropout(np.ones((2, 4), np.float32), 0.5, seed=3)
    >>> sorted(set(sl.Session().run(y).ravel().tolist())) == [0.0, 2.0]
    True
    """
    if not 0.0 <= float(rate) < 1.0:
        raise ValueError(f"dropout: `rate` must be in [0, 1), got {rate}.")
    with graph_lib.name_scope(None, "dropout", [inputs]) as scope:
        x = core_ops.convert_to_tensor(inputs, name="inputs")
        if not dtypes.is_floating(x.dtype):
            raise TypeError(f"dropout: the inputs must be floating, got {x.dtype.name}.")
        keep = 1.0 - float(rate)
        mask_shape = _noise_shape(x, noise_shape)
        draws = random_ops.random_uniform(mask_shape, dtype=x.dtype, seed=seed_stream(seed))
        kept = math_ops.less(draws, core_ops.constant(keep, x.dtype))
        kept = array_ops.broadcast_to(kept, fill_ops.shape(x))
        scaled = x / core_ops.constant(keep, x.dtype)
        return gather_ops.where(kept, scaled, fill_ops.zeros_like(x), name=scope)


def _noise_shape(x: Tensor, noise_shape: Any) -> Any:
    """The mask's shape: the input's, or `noise_shape` with its None entries taken from it."""
    if noise_shape is None:
        return x.shape if x.shape.is_fully_defined() else fill_ops.shape(x)
    dims = list(noise_shape)
    if x.shape.rank is not None and len(dims) != x.shape.rank:
        raise ValueError(f"dropout: noise_shape {dims} does not have the rank of {x.shape}.")
    if all(d is not None for d in dims):
        return dims
    known = x.shape.as_list() if x.shape.rank is not None else [None] * len(dims)
    if all(d is not None or k is not None for d, k in zip(dims, known)):
        return [k if d is None else d for d, k in zip(dims, known)]
    runtime = fill_ops.shape(x)
    return join_ops.stack(
        [
            runtime[i] if d is None else core_ops.constant(d, dtypes.int32)
            for i, d in enumerate(dims)
        ]
    )


@export("random.binomial")
@_keras_seeded
def binomial(
    shape: Any, counts: Any, probabilities: Any, dtype: Any = None, seed: Any = None
) -> Tensor:
    """Draws of Binomial(counts, probabilities) (Keras's `keras.random.binomial`).

    Args:
      shape: the output shape; `counts` and `probabilities` broadcast to it.
      counts: the numbers of trials.
      probabilities: the probabilities of success.
      dtype: a floating dtype (default `sl.config.floatx()`).
      seed: an int, a `SeedGenerator` or None (see the module docstring).
    """
    dtype = _dtype(dtype, "float", "binomial")
    with graph_lib.name_scope(None, "binomial", [counts, probabilities]) as scope:
        inputs = [
            random_ops.shape_tensor(shape),
            seed_stream(seed).next(),
            core_ops.convert_to_tensor(counts, dtype=dtype, name="counts"),
            core_ops.convert_to_tensor(probabilities, dtype=dtype, name="probabilities"),
        ]
        op = core_ops.apply_op("StatelessRandomBinomial", inputs, {"dtype": dtype}, scope)
        return op.outputs[0]


@export("random.beta")
@_keras_seeded
def beta(shape: Any, alpha: Any, beta: Any, dtype: Any = None, seed: Any = None) -> Tensor:
    """Draws of Beta(alpha, beta) (Keras's `keras.random.beta`): `x / (x + y)` for x, y drawn
    from Gamma(alpha) and Gamma(beta) with one seed.

    Args:
      shape: the output shape; `alpha` and `beta` broadcast to it.
      alpha, beta: the distribution's parameters (> 0).
      dtype: a floating dtype (default `sl.config.floatx()`).
      seed: an int, a `SeedGenerator` or None (see the module docstring).
    """
    dtype = _dtype(dtype, "float", "beta")
    with graph_lib.name_scope(None, "beta", [alpha, beta]) as scope:
        full = random_ops.shape_tensor(shape)
        a = array_ops.broadcast_to(core_ops.convert_to_tensor(alpha, dtype=dtype), full)
        b = array_ops.broadcast_to(core_ops.convert_to_tensor(beta, dtype=dtype), full)
        both = join_ops.stack([a, b], axis=-1)
        draws = random_dist_ops.random_gamma([], both, dtype=dtype, seed=seed_stream(seed))
        x, y = join_ops.unstack(draws, num=2, axis=-1)
        return math_ops.divide(x, x + y, name=scope)
