"""JAX's global settings belong to the user: importing and using sluice leaves the process's
`jax_enable_x64` as the user set it, while sluice's own float64/int64 values stay 64-bit (it
runs its JAX calls under the scoped `jax.enable_x64(True)`, see sluice/framework/ir/x64.py).

Each case runs in a fresh interpreter, so the user's JAX code is seen before sluice is imported.
"""

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import sluice as sl

_SCRIPT = textwrap.dedent("""
    import json, sys
    import jax, jax.numpy as jnp, numpy as np

    def user():
        key = jax.random.PRNGKey(0)
        jitted = jax.jit(lambda x: x * 2 + jnp.arange(3))(jnp.array(1.5))
        return {
            "x64": bool(jax.config.jax_enable_x64),
            "arange": str(jnp.arange(3).dtype),
            "array": str(jnp.array(1.5).dtype),
            "jit": [str(jitted.dtype), jitted.tolist()],
            "prng_key": str(key.dtype),
            "typed_key": str(jax.random.key_data(jax.random.key(0)).dtype),
            "uniform": str(jax.random.uniform(key).dtype),
            "normal": float(jax.random.normal(key)),
        }

    if sys.argv[1] == "user_x64":
        jax.config.update("jax_enable_x64", True)
    seen = {"before": user()}
    import sluice as sl
    seen["after_import"] = user()

    # sluice's own 64-bit values: both engines, a feed, a variable, a random op, a data thread
    x = sl.placeholder(sl.float64, [2])
    big = sl.constant(2 ** 40, sl.int64)
    v = sl.Variable(np.array([1.0 + 1e-12, 2.0]))
    r = sl.random_uniform([3], dtype=sl.float64, seed=1)
    ds = sl.data.Dataset.from_tensor_slices(np.array([2 ** 41, 3], np.int64))
    element = ds.map(lambda e: e + 1).prefetch(2).make_one_shot_iterator().get_next()
    y = x * v + 1e-13
    fetches = [y, big + 1, sl.reduce_sum(r), element, sl.cast(big, sl.float64) / 3]
    graph = {}
    for engine in ["compiled", "interpreted"]:
        with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
            sess.run(v.initializer)
            got = sess.run(fetches, {x: [1.0, 1.0]})
            graph[engine] = [[str(np.asarray(g).dtype), np.asarray(g).tolist()] for g in got]
    seen["graph"] = graph

    # a Keras model's fit, predict and evaluate
    model = sl.Sequential([sl.layers.Dense(1, input_shape=(2,))])
    model.compile(optimizer="sgd", loss="mse")
    data = np.ones((8, 2), np.float32)
    in_callback = []
    record = sl.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: in_callback.append(bool(jax.config.jax_enable_x64)))
    model.fit(data, np.ones((8, 1), np.float32), epochs=1, batch_size=4, verbose=0,
              callbacks=[record])
    seen["callback_x64"] = in_callback
    seen["predict"] = str(model.predict(data, verbose=0).dtype)
    model.evaluate(data, np.ones((8, 1), np.float32), verbose=0)
    seen["ops"] = str(sl.ops.add(np.ones(2), 1.0).dtype)
    seen["after"] = user()
    print("RESULT " + json.dumps(seen))
""")


def _run(mode: str) -> dict:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_ENABLE_X64", None)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, mode], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = [s for s in done.stdout.splitlines() if s.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


def _check_graph(seen: dict) -> None:
    for engine, got in seen["graph"].items():
        (y_dtype, y), (big_dtype, big), (r_dtype, _), (e_dtype, e), (q_dtype, q) = got
        assert y_dtype == "float64" and y == [1.0 + 1e-12 + 1e-13, 2.0 + 1e-13], engine
        assert big_dtype == "int64" and big == 2**40 + 1, engine
        assert r_dtype == "float64", engine
        assert e_dtype == "int64" and e == 2**41 + 1, engine  # made on the prefetch thread
        assert q_dtype == "float64" and q == 2**40 / 3, engine
    assert seen["predict"] == "float32"  # float32 models stay float32
    assert seen["ops"] == "float64"  # sl.ops on arrays: sluice's 64-bit types too


def test_sluice_leaves_a_users_32_bit_jax_as_it_was():
    seen = _run("user_default")
    before = seen["before"]
    assert before["x64"] is False and before["arange"] == "int32"
    assert before["array"] == "float32" and before["prng_key"] == "uint32"
    assert seen["after_import"] == before  # importing changes nothing
    assert seen["after"] == before  # nor building and running 64-bit graphs, nor fit
    assert seen["callback_x64"] == [False]  # the user's callbacks see the user's setting
    _check_graph(seen)


@pytest.mark.slow  # a second subprocess; the default run checks the user's 32-bit JAX
def test_a_user_who_turned_x64_on_keeps_it():
    seen = _run("user_x64")
    before = seen["before"]
    assert before["x64"] is True and before["arange"] == "int64" and before["array"] == "float64"
    assert seen["after_import"] == before
    assert seen["after"] == before
    assert seen["callback_x64"] == [True]
    _check_graph(seen)


def test_the_suite_itself_runs_with_the_process_wide_setting_off():
    # tests/conftest.py also asserts it once: an entry point that forgets sluice's scope then
    # shows as a float64/int64 value narrowed to 32 bits in the suite's own tests
    assert jax.config.jax_enable_x64 is False
    x = sl.constant(np.array([1.0 + 1e-12]), sl.float64)
    with sl.Session() as sess:
        got = sess.run(x * 1)
    assert got.dtype == np.float64 and got[0] == 1.0 + 1e-12
    assert jax.numpy.arange(3).dtype == np.int32


@pytest.mark.parametrize("engine", ["compiled", "interpreted"])
def test_host_callbacks_run_the_users_function_under_the_users_setting(engine):
    seen = []

    def f(a):
        seen.append(bool(jax.config.jax_enable_x64))
        return a * 2

    x = sl.placeholder(sl.float64, [2])
    (y,) = sl.py_func(f, [x], [sl.float64])
    y.set_shape([2])
    with sl.Session(config=sl.SessionConfig(engine=engine)) as sess:
        got = sess.run(y, {x: [1.0 + 1e-12, 2.0]})
    assert got.dtype == np.float64 and got[0] == 2.0 + 2e-12  # NumPy in, NumPy out: exact
    assert seen == [False]  # the suite runs with the process's setting off


def test_a_generator_runs_under_the_users_setting():
    seen = []

    def numbers():
        for i in range(2):
            seen.append(bool(jax.config.jax_enable_x64))
            yield np.int64(2**40 + i)

    ds = sl.data.Dataset.from_generator(numbers, sl.int64, [])
    value = ds.make_one_shot_iterator().get_next()
    with sl.Session() as sess:
        assert [sess.run(value), sess.run(value)] == [2**40, 2**40 + 1]  # still 64-bit
    assert seen == [False, False]
