"""`run_layer_test`: the contract every layer meets, written once (Keras's `run_layer_test`).

For one layer class and its arguments, `run_layer_test` checks:

1. the config round trip: `from_config(get_config())` has the same (JSON-serialisable) config;
2. in float32, called on an `sl.Input` with an unknown batch: the static output shape(s), the
   dtype, `compute_output_shape`, the number of trainable and non-trainable weights, their
   names (`<layer>/<...>`) and shapes;
3. in float64, with every weight set to random values: the values' shapes, and the gradients of
   a random projection of the outputs w.r.t. the (floating) inputs and every trainable weight
   against central differences on a few random entries of each.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

import sluice as sl
from sluice import layers
from sluice._tf1.cells import nest
from sluice.testing.gradient_checker import central_difference


def _values(shape: tuple, dtype: str, rng, int_high: int) -> np.ndarray:
    if dtype.startswith("int"):
        return rng.integers(0, int_high, size=shape).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


def _weight_value(v, rng) -> np.ndarray:
    value = 0.5 * rng.normal(size=v.shape.as_list())
    if "variance" in v.op.name:
        value = np.abs(value) + 0.5
    return value.astype(v.dtype)


def _check_config(cls: type, kwargs: dict) -> dict:
    layer = cls(**kwargs)
    config = layer.get_config()
    json.dumps(config)  # plain data
    clone = cls.from_config(config)
    assert clone.get_config() == config
    return config


def _check_structure(
    cls: type,
    kwargs: dict,
    input_shape: tuple,
    input_dtype: str,
    call_kwargs: dict,
    expected_output_shape: Any,
    expected_weights: dict[str, tuple],
    expected_num_non_trainable: int,
) -> None:
    with sl.Graph().as_default():
        layer = cls(**kwargs)
        x = layers.Input(batch_shape=(None,) + tuple(input_shape[1:]), dtype=input_dtype)
        y = layer(x, **call_kwargs)
        flat = nest.flatten(y)
        expected = (
            expected_output_shape
            if isinstance(expected_output_shape, list)
            else [expected_output_shape]
        )
        assert [tuple(t.shape.as_list()) for t in flat] == [tuple(s) for s in expected]
        assert all(t.dtype == np.float32 for t in flat)
        computed = layer.compute_output_shape((None,) + tuple(input_shape[1:]))
        computed = computed if isinstance(computed, list) else [computed]
        assert [tuple(s) for s in computed] == [tuple(s) for s in expected]
        names = {v.op.name: tuple(v.shape.as_list()) for v in layer.weights}
        assert names == {f"{layer.name}/{n}": tuple(s) for n, s in expected_weights.items()}
        assert len(layer.non_trainable_weights) == expected_num_non_trainable
        assert len(layer.trainable_weights) == len(expected_weights) - expected_num_non_trainable
        assert all(v.dtype == np.float32 for v in layer.weights)
        assert layer.count_params() == sum(int(np.prod(s)) for s in expected_weights.values())


def _check_gradients(
    cls: type,
    config: dict,
    input_shape: tuple,
    input_dtype: str,
    call_kwargs: dict,
    expected_output_shape: Any,
    int_high: int,
    entries: int = 6,
    delta: float = 1e-6,
) -> None:
    rng = np.random.default_rng(0)
    with sl.Graph().as_default():
        layer = cls.from_config({**config, "dtype": "float64"})
        dtype = "float64" if input_dtype.startswith("float") else input_dtype
        x = sl.placeholder(dtype, list(input_shape), name="x")
        y = layer(x, **call_kwargs)
        flat = nest.flatten(y)
        projections = [rng.normal(size=t.shape.as_list()) for t in flat]
        loss = sl.add_n([sl.reduce_sum(t * p) for t, p in zip(flat, projections)])
        targets = ([x] if dtype == "float64" else []) + layer.trainable_weights
        # an IndexedSlices gradient (Embedding's) is compared as the dense tensor it stands for
        grads = [g if g is None else sl.convert_to_tensor(g) for g in sl.gradients(loss, targets)]
        x_value = _values(tuple(input_shape), dtype, rng, int_high)
        with sl.Session() as sess:
            weights = {v: _weight_value(v, rng) for v in layer.weights}
            for v, value in weights.items():
                v.load(value, sess)
            feed = {x: x_value}
            # every run fetches the same tensors, so the session compiles one step for them all
            every_fetch = [loss, flat, grads]
            _, outputs, symbolic = sess.run(every_fetch, feed)
            expected = (
                expected_output_shape
                if isinstance(expected_output_shape, list)
                else [expected_output_shape]
            )
            for out, shape in zip(outputs, expected):
                assert out.shape == tuple(input_shape[0] if d is None else d for d in shape)
                assert np.all(np.isfinite(out))
            for target, grad in zip(targets, symbolic):
                assert grad is not None, f"no gradient for {target.name}"
                base = x_value if target is x else weights[target]

                def loss_at(shifted, target=target, base=base):
                    if target is x:
                        return sess.run(every_fetch, {x: shifted.reshape(base.shape)})[0]
                    target.load(shifted.reshape(base.shape), sess)
                    return sess.run(every_fetch, feed)[0]

                flat_base = base.reshape(-1)
                for k in rng.choice(
                    flat_base.size, size=min(entries, flat_base.size), replace=False
                ):
                    slope = central_difference(loss_at, flat_base, k, delta)
                    if target is not x:
                        target.load(base, sess)
                    np.testing.assert_allclose(
                        grad.reshape(-1)[k],
                        slope,
                        rtol=1e-5,
                        atol=1e-7,
                        err_msg=f"{cls.__name__}: d loss / d {target.name}[{k}]",
                    )


def run_layer_test(
    cls: type,
    init_kwargs: dict,
    input_shape: tuple,
    expected_output_shape: Any,
    expected_weights: dict[str, tuple],
    expected_num_non_trainable: int = 0,
    input_dtype: str = "float32",
    call_kwargs: dict | None = None,
    gradient_call_kwargs: dict | None = None,
    int_high: int = 5,
) -> None:
    """Checks one layer class against the layer contract (see the module docstring).

    Args:
      cls, init_kwargs: the layer class and its arguments.
      input_shape: the input shape, batch included (the batch is left unknown in step 2).
      expected_output_shape: the static output shape with batch None (a list for several).
      expected_weights: {name inside the layer: shape}, e.g. {"kernel": (4, 3), "bias": (3,)}.
      expected_num_non_trainable: how many of them are not trainable.
      input_dtype: "float32" or an integer dtype (then no gradient w.r.t. the inputs).
      call_kwargs: extra call arguments (e.g. training=True).
      gradient_call_kwargs: call arguments for the gradient check (default call_kwargs).
      int_high: the bound of random integer inputs.

    Raises:
      AssertionError: the layer breaks the contract.

    >>> run_layer_test(
    ...     sl.layers.Dense,
    ...     {"units": 3, "activation": "tanh"},
    ...     input_shape=(2, 4),
    ...     expected_output_shape=(None, 3),
    ...     expected_weights={"kernel": (4, 3), "bias": (3,)},
    ... )
    """
    call_kwargs = dict(call_kwargs or {})
    config = _check_config(cls, init_kwargs)
    _check_structure(
        cls, init_kwargs, input_shape, input_dtype, call_kwargs, expected_output_shape,
        expected_weights, expected_num_non_trainable,
    )  # fmt: skip
    grad_kwargs = call_kwargs if gradient_call_kwargs is None else gradient_call_kwargs
    _check_gradients(
        cls, config, input_shape, input_dtype, grad_kwargs, expected_output_shape, int_high
    )
