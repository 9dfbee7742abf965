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
