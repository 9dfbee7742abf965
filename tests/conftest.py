"""Every test builds its graph in a fresh default graph, and starts without the process-wide
seed of `sl.utils.set_random_seed`; the control-flow and gradient tests also run in both engines
(the differential sweep, tests/differential_sweep.py)."""

import os

# Four virtual CPU devices for the multi-device tests, set before JAX starts its backends (the
# other tests run on the first one, as on a one-device machine).
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=4").strip()

# The tests' time goes mostly to XLA compiling small programs, each run a few times: LLVM's
# optimisation passes cost more than they save there (a conv model's fit: 12.9 s -> 5.1 s). The
# ops and their float semantics are unchanged (no fast math either way); benchmarks/, examples
# run by hand and users keep XLA's default level.
if "xla_backend_optimization_level" not in os.environ["XLA_FLAGS"]:
    os.environ["XLA_FLAGS"] += " --xla_backend_optimization_level=0"

# One persistent XLA cache for the whole run, shared by the xdist workers and the scripts tests
# start (they inherit the environment): a program compiled once (the same model in another
# session, a resumed script's training step) is loaded, not compiled again. A fresh folder per
# run, removed by the process that made it.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    _cache = tempfile.mkdtemp(prefix="sluice-tests-xla-cache-")
    atexit.register(shutil.rmtree, _cache, ignore_errors=True)
    os.environ.update(JAX_COMPILATION_CACHE_DIR=_cache,
                      JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                      JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")

import pytest  # noqa: E402

import sluice as sl  # noqa: E402
from sluice import utils  # noqa: E402

pytest_plugins = ["tests.differential_sweep"]


@pytest.fixture(autouse=True)
def fresh_graph():
    g = sl.Graph()
    with g.as_default():
        yield g


@pytest.fixture(autouse=True)
def no_global_seed(monkeypatch):
    monkeypatch.setattr(utils, "_seed", None)


@pytest.fixture(autouse=True)
def no_distribution():
    """A test that sets a distribution (sl.distribution.set_distribution) leaves none behind."""
    yield
    sl.distribution.set_distribution(None)


# Variants the default run leaves to `-m slow` to stay within its 10-minute budget on 2 cores.
# Each is a second instance of something the default run checks: another cell, script or
# engine of the same contract, or a pass the default configuration does not use.
SLOW_IN_DEFAULT_RUN = (
    "tests/examples/test_keras_examples.py::test_lstm_sequence_resumes_exactly",
    "tests/distribution/test_multiprocess.py::test_cnn_model_parallel_over_two_processes",
    "tests/framework/ops/test_tf1_math_ops.py::test_gradients_match_central_differences",
    "tests/framework/ops/test_tf1_array_ops.py::test_gradients_match_central_differences",
    "tests/framework/ops/test_linalg_ops.py::test_gradients_match_central_differences",
    "tests/cells/test_cells.py::test_cell_contract[dropout_wrapper_keep_1]",
    "tests/cells/test_cells.py::test_cell_contract[lstm_peepholes_clip_projection]",
    "tests/cells/test_cells.py::test_cell_contract[multi_lstm_gru]",
    "tests/cells/test_cells.py::test_cell_contract[basic_lstm_concat_state]",
    "tests/cells/test_cells.py::test_cell_contract[basic_lstm_forget_bias_0]",
    "tests/cells/test_cells.py::test_cell_contract[residual_wrapper]",
    "tests/keras_scripts/test_scripts.py::test_script_runs[imdb_bidirectional]",
    "tests/keras_scripts/test_scripts.py::test_script_runs[mnist_convnet]",
    "tests/framework/test_loop_passes.py::test_pass_gives_the_same_loss_and_gradients",
    "tests/framework/test_repeats.py::test_other_cells_roll_and_agree",
    "tests/cells/test_dynamic_rnn.py::test_swap_memory_and_the_interpreted_engine_give_the_same",
    "tests/framework/ops/test_random_ops.py::test_different_seeds_differ",
    "tests/framework/ops/test_random_ops.py::test_same_seeds_reproduce_in_a_new_graph",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(SLOW_IN_DEFAULT_RUN):
            item.add_marker(pytest.mark.slow)
