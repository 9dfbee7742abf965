"""Every test builds its graph in a fresh default graph, and starts without the process-wide
seed of `sl.utils.set_random_seed`; the control-flow and gradient tests also run in both engines
(the differential sweep, tests/differential_sweep.py)."""

import gc
import os
import sys

# Where the environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE), each Python process
# would compile sluice's ~550 modules from source again: about 1.7 s of CPU for every xdist
# worker and every script a test starts (a resumed run, a launcher's processes). The run keeps
# its bytecode in a folder of its own instead (PYTHONPYCACHEPREFIX, inherited by the workers
# and scripts), so nothing is written beside the sources: pytest's cache folder, kept from run to
# run. A prefix holds the bytecode of every module imported after it is set (JAX, NumPy, and
# pytest's own in the workers), not only sluice's: in a fresh folder the run's processes compiled
# ~1,500 modules again (a `-n 2` run of one small file: 18 s -> 7-9 s once the folder is filled).
# Python checks each file against its source's size and time, as in __pycache__. A run without
# that setting writes __pycache__ as Python always does; nothing changes there.
if sys.dont_write_bytecode and not sys.pycache_prefix:
    _root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    _pycache = os.path.join(_root, ".pytest_cache", "pycache")
    try:
        os.makedirs(_pycache, exist_ok=True)
    except OSError:  # a read-only checkout: a folder of the run's own, removed at the end
        import atexit
        import shutil
        import tempfile

        _pycache = tempfile.mkdtemp(prefix="sluice-tests-pycache-")
        atexit.register(shutil.rmtree, _pycache, ignore_errors=True)
    sys.pycache_prefix = _pycache
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = _pycache
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Four virtual CPU devices for the multi-device tests, set before JAX starts its backends (the
# other tests run on the first one, as on a one-device machine).
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    ).strip()

# The tests' time goes mostly to XLA compiling small programs, each run a few times: LLVM's
# optimisation passes cost more than they save there (a conv model's fit: 12.9 s -> 5.1 s). The
# ops and their float semantics are unchanged (no fast math either way); benchmarks/, examples
# run by hand and users keep XLA's default level.
if "xla_backend_optimization_level" not in os.environ["XLA_FLAGS"]:
    os.environ["XLA_FLAGS"] += " --xla_backend_optimization_level=0"
# For the same reason the elementwise fusions are emitted by XLA:CPU's classic IR emitter, not
# its MLIR fusion emitters, whose pipeline costs most of a small program's compile time (a small
# conv + LSTM training step: about 4x faster to compile). Both emit IEEE float code without fast
# math; the last bits of a transcendental may differ, as between XLA versions.
if "xla_cpu_use_fusion_emitters" not in os.environ["XLA_FLAGS"]:
    os.environ["XLA_FLAGS"] += " --xla_cpu_use_fusion_emitters=false"

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
    os.environ.update(
        JAX_COMPILATION_CACHE_DIR=_cache,
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
        JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
    )

# sluice's own compilation cache (sluice/framework/compiler/persistent_cache.py) defers to the
# JAX cache above; a script a test starts without it finds sluice's off: no test writes to the
# user's cache folder.
os.environ.setdefault("SLUICE_COMPILATION_CACHE", "off")

# Every graph a test runs is checked before it first runs (SessionConfig(check_graph=True), see
# sluice/framework/control_flow/checks.py), as JAX's tests run under jax_enable_checks: a builder
# bug fails at the op it breaks, not as a wrong number later. Scripts the tests start inherit it;
# SLUICE_CHECK_GRAPH=0 turns it off.
os.environ.setdefault("SLUICE_CHECK_GRAPH", "1")

os.environ.pop("JAX_ENABLE_X64", None)  # the suite runs with JAX's own default: x64 off
import jax  # noqa: E402
import pytest  # noqa: E402

import sluice as sl  # noqa: E402
from sluice._keras import config as keras_config  # noqa: E402
from sluice._keras.utils import naming, rng_utils  # noqa: E402

# JAX's global settings belong to the user: importing sluice leaves x64 off, and the suite runs
# with it off, so an entry point that forgets sluice's scoped x64 (see sluice/framework/ir/x64.py)
# shows up as a float64/int64 value turned 32-bit.
assert not jax.config.jax_enable_x64, "importing sluice turned jax_enable_x64 on for the process"

pytest_plugins = ["tests.differential_sweep"]


@pytest.fixture(autouse=True)
def fresh_graph():
    naming.reset_uids()  # default names of metrics count from scratch, as after clear_session
    g = sl.Graph()
    with g.as_default():
        yield g


@pytest.fixture(autouse=True)
def no_global_seed(monkeypatch):
    monkeypatch.setattr(rng_utils, "_seed", None)


@pytest.fixture(autouse=True)
def keras_settings_put_back():
    """A test or docstring example that changes a Keras setting (floatx, the global dtype
    policy, ...) leaves the settings it found, so later tests on the worker see the defaults."""
    saved = dict(keras_config._settings)
    yield
    keras_config._settings.clear()
    keras_config._settings.update(saved)


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
    # issue 17 added ~600 tests: these second variants of what the default run already checks
    # (more Keras scripts, rolled-loop and loop-pass shapes, interpreted twins, a second
    # multi-process run beside the launch tests) moved here to stay within the budget
    "tests/distribution/test_multiprocess.py::test_lstm_data_parallel_over_two_processes",
    "tests/keras_scripts/test_scripts.py::test_script_runs[custom_cell]",
    "tests/keras_scripts/test_scripts.py::test_script_runs[addition_rnn]",
    "tests/keras_scripts/test_scripts.py::test_script_runs[conv1d_timeseries]",
    "tests/keras_scripts/test_scripts.py::test_script_runs[residual_functional]",
    "tests/framework/test_repeats.py::test_the_final_state_and_a_middle_step_can_be_fetched",
    "tests/framework/test_repeats.py::test_an_unknown_batch_size_still_rolls",
    "tests/framework/test_repeats.py::test_layers_unrolled_one_after_another_read_each_others",
    "tests/framework/test_repeats.py::test_an_input_computed_from_the_previous_output_rolls",
    "tests/framework/test_repeats.py::test_rolled_steps_cost_a_few_equations_each",
    "tests/framework/test_loop_passes.py::test_passes_with_sequence_length_run_in_a_while_loop",
    "tests/framework/test_loop_passes.py::test_keras_recurrent_layers_hoist_their_input_matmul[LSTM]",
    "tests/framework/test_loop_passes.py::test_keras_recurrent_layers_hoist_their_input_matmul[Simp",
    "tests/layers/test_attention_layers.py::test_a_transformer_block_config_round_trips_through_js",
    "tests/layers/test_attention_layers.py::test_mha_gradients",
    "tests/checkpoints/test_resume.py::test_stopped_and_resumed_run_matches_uninterrupted[lstm-<lam"
    "bda>-interpreted]",
    "tests/framework/placement/test_model_parallel.py::test_multi_tower_script_trains_like_one_devi"
    "ce[3-interpreted]",
    "tests/framework/test_gradient_calls.py::test_gradient_penalty_style_reuse_of_an_rnn_gradient[d"
    "ifferential]",
    "tests/distribution/test_fit_resume_distributed.py::test_a_data_parallel_backup_restores_on_one",
    "tests/distribution/test_launch.py::test_the_timeout_stops_every_process_with_124",
    "tests/distribution/test_launch.py::test_a_module_gets_its_arguments_and_the_job_environment",
    "tests/distribution/test_session_distribution.py::test_lstm_with_gradients_equals_one_device",
    "tests/cells/test_cells.py::test_cell_contract[lstm]",
    "tests/cells/test_cells.py::test_cell_contract[basic_rnn]",
    "tests/cells/test_dynamic_rnn.py::test_dropout_wrapper_is_seeded_and_scales_kept_values[plain]",
    "tests/cells/test_static_rnn.py::test_static_rnn_equals_dynamic_rnn_on_the_same_variables_valu"
    "es_and_gradients[interpreted]",
    "tests/framework/test_tensor_array.py::test_dynamic_size_grows_in_both_engines[interpreted]",
    "tests/framework/test_tensor_array.py::test_rnn_over_a_tensor_array_in_a_while_loop[interpreted]",
    "tests/framework/test_tensor_array.py::test_gather_scatter_values_and_gradients[interpreted]",
    "tests/framework/ops/test_tf1_array_ops.py::test_segment_gradient_ties_and_zeros[interpreted]",
    "tests/cells/test_variable_scope_tf1.py::test_training_and_inference_graphs_share_weights[inter",
    "tests/models/test_functional_passthrough.py::test_a_passthrough_layer_between_dense_layers[se",
    # issue 25's tests: the seq2seq script's encoder-states pattern is also
    # tests/layers/test_rnn_keras_api.py::test_seq2seq_with_encoder_states_as_initial_state
    "tests/keras_scripts/test_scripts.py::test_script_runs[seq2seq_chars]",
    # 14 s of CPU: its GAN (two optimizers, custom compile, two tapes a step, fit on x alone) is
    # tests/models/test_custom_steps.py::test_a_gan_without_call_trains_both_parts_from_x_alone;
    # a registered train_step model with Conv2DTranspose and a SeedGenerator, saved and trained
    # on in a new process, is the vae script (test_script_runs[vae])
    "tests/keras_scripts/test_scripts.py::test_script_runs[dcgan]",
    # ~4 s of CPU each. The RNN guide's stateful calls on arrays, reset_states and states as
    # another layer's initial_state are tests/layers/test_value_calls.py's stateful tests; a
    # stateful LSTM trained in consecutive batches with resets is the stateful_lstm script
    "tests/keras_scripts/test_scripts.py::test_script_runs[rnn_stateful_arrays]",
    # the JAX guide's loop (stateless_call under jax.value_and_grad, stateless_apply, jit on a
    # state tuple, values assigned back) and optax driving it are tests/models/test_stateless.py
    "tests/keras_scripts/test_scripts.py::test_script_runs[jax_training_loop]",
    # under the differential sweep every session runs both engines whatever engine the test
    # asked for: [compiled-differential] is the same check
    "tests/cells/test_dynamic_rnn.py::test_zero_time_steps_give_empty_outputs_and_the_initial_sta"
    "te[interpreted-differential]",
    "tests/cells/test_dynamic_rnn.py::test_gradients_over_zero_time_steps_known_only_at_run_time[i"
    "nterpreted-differential]",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.nodeid.startswith(SLOW_IN_DEFAULT_RUN):
            item.add_marker(pytest.mark.slow)
    # the swept tests' plain cases whose differential twin runs (tests/differential_sweep.py)
    config.pluginmanager.get_plugin("tests.differential_sweep").plain_twins_to_slow(items)


# Python's default thresholds (700, 10, 10) run a young collection every 700 allocations and a
# full one every 100 young ones: a test building graphs and JAX programs allocates so much that
# the run made ~4,200 collections and 27 full walks of a large heap in tests/framework/ops +
# tests/models (9.1 s of GC, 7% of the CPU). Rarer collections free the same cycles later:
# 42 collections, 6 full, 5.3 s; the files' CPU 129.2 -> 126.7 s (two alternating pairs).
gc.set_threshold(50_000, 50, 100)


def pytest_collection_finish(session):
    """The modules, parameters and JAX state that collection leaves live mostly stay live for
    the whole run: frozen, Python's cyclic GC no longer walks them at every full collection (in
    test_math_ops: 3.1 -> 2.2 s of GC on one worker). The collection first leaves only live
    objects; one of them dropped later is still freed by its reference count, unless in a cycle."""
    gc.collect()
    gc.freeze()
