"""The persistent compilation cache (sluice/framework/compiler/persistent_cache.py): where it is,
how it is turned off or moved, that a damaged or foreign entry is never loaded, that a folder it
cannot use is reported once, and (in fresh processes, `slow`) that a second run loads its steps,
with the same numbers, after its entries were damaged too."""

import json
import logging
import os
import pathlib
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import sluice as sl
from sluice.framework.compiler import persistent_cache

ROOT = pathlib.Path(__file__).parents[2]


# -- where the cache is -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "env, expected",
    [
        (None, "default"),
        ("", "default"),
        ("1", "default"),
        ("on", "default"),
        ("0", None),
        ("off", None),
        ("False", None),
        ("no", None),
        ("~/elsewhere", "home"),
    ],
)
def test_resolve_reads_the_environment(monkeypatch, tmp_path, env, expected):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if env is None:
        monkeypatch.delenv(persistent_cache.ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(persistent_cache.ENV_VAR, env)
    found = persistent_cache.resolve(None)
    if expected is None:
        assert found is None
    elif expected == "home":
        assert found == tmp_path / "home" / "elsewhere"
    elif sys.platform.startswith("linux"):
        assert found == tmp_path / "xdg" / "sluice" / "xla"
    else:
        assert found == persistent_cache.default_directory()


def test_the_config_wins_over_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(persistent_cache.ENV_VAR, "off")
    assert persistent_cache.resolve(tmp_path) == tmp_path
    assert persistent_cache.resolve(str(tmp_path)) == tmp_path
    assert persistent_cache.resolve(True) == persistent_cache.default_directory()
    monkeypatch.setenv(persistent_cache.ENV_VAR, str(tmp_path))
    assert persistent_cache.resolve(False) is None
    assert sl.SessionConfig(compilation_cache=False).compilation_cache is False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG is Linux's convention")
def test_default_folder_is_the_users_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert persistent_cache.default_directory() == tmp_path / "sluice" / "xla"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert persistent_cache.default_directory() == tmp_path / "h" / ".cache" / "sluice" / "xla"


def test_config_refuses_other_types():
    with pytest.raises(TypeError, match="compilation_cache.*got 3"):
        sl.SessionConfig(compilation_cache=3)


# -- entries are verified -----------------------------------------------------------------------

KEY = "jit__step-" + "ab" * 32


def _fresh_store(folder: pathlib.Path) -> persistent_cache.Store:
    return persistent_cache.Store(folder)  # not the process's shared one: its own warning state


def test_an_entry_reads_back_as_written(tmp_path):
    store = _fresh_store(tmp_path / "c")
    assert store.get(KEY) is None
    store.put(KEY, b"executable bytes")
    assert store.get(KEY) == b"executable bytes"
    (entry,) = store.entries()
    assert entry.name == KEY and entry.parent.name == persistent_cache.build_tag()
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".tmp-")]
    if hasattr(os, "getuid"):
        assert (tmp_path / "c").stat().st_mode & 0o777 == 0o700


def _damage(kind, data, other):
    header = len(persistent_cache.MAGIC) + 32
    return {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "flipped": data[:-1] + bytes([data[-1] ^ 1]),
        "garbage": bytes(range(256)) * 4,
        "jax format (no header)": data[header:],
        "another key's entry": other,
    }[kind]


@pytest.mark.parametrize(
    "kind",
    ["truncated", "empty", "flipped", "garbage", "jax format (no header)", "another key's entry"],
)
def test_a_bad_entry_is_dropped_and_written_again(tmp_path, kind):
    store = _fresh_store(tmp_path)
    other_key = "jit__other-" + "cd" * 32
    store.put(KEY, b"the step's executable" * 10)
    store.put(other_key, b"another program" * 10)
    entry = store.path / KEY
    entry.write_bytes(_damage(kind, entry.read_bytes(), (store.path / other_key).read_bytes()))
    assert store.get(KEY) is None  # JAX compiles instead
    assert not entry.exists() and store.dropped == 1
    store.put(KEY, b"the step's executable" * 10)  # the fresh compile's entry
    assert store.get(KEY) == b"the step's executable" * 10
    assert store.get(other_key) == b"another program" * 10


def test_keys_cannot_name_other_files(tmp_path):
    store = _fresh_store(tmp_path)
    for key in ["../escape", "a/b", "", ".hidden"]:
        with pytest.raises(ValueError, match="not a compilation cache key"):
            store.get(key)


def test_an_unusable_folder_warns_once_and_compiles(tmp_path, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    store = _fresh_store(blocker / "cache")
    with caplog.at_level(logging.WARNING, logger="sluice"):
        for _ in range(3):
            assert store.get(KEY) is None
            store.put(KEY, b"x")
    (record,) = caplog.records
    assert "cannot be created" in record.getMessage() and str(blocker) in record.getMessage()
    assert blocker.read_text() == "not a folder"


def test_an_unwritable_entry_warns_once(tmp_path, caplog):
    store = _fresh_store(tmp_path)
    store.put(KEY, b"x")
    (store.path / "jit__a").mkdir()  # os.replace cannot put a file there, even as root
    with caplog.at_level(logging.WARNING, logger="sluice"):
        store.put("jit__a", b"y")
        store.put("jit__b", b"z")  # writing stays off for the process
    (record,) = caplog.records
    assert "cannot be written" in record.getMessage()
    assert store.get(KEY) == b"x" and store.get("jit__b") is None


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_folder_anyone_may_write_is_not_used(tmp_path, caplog):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    store = _fresh_store(shared)
    with caplog.at_level(logging.WARNING, logger="sluice"):
        store.put(KEY, b"x")
        assert store.get(KEY) is None
    (record,) = caplog.records
    assert "any user may write" in record.getMessage()
    assert list(shared.iterdir()) == []


def test_prune_removes_the_least_recently_used(tmp_path):
    build = tmp_path / "jaxlib-old"
    build.mkdir()
    for i in range(4):
        f = build / f"jit_{i}"
        f.write_bytes(b"." * 100)
        os.utime(f, (1000 + i, 1000 + i))
    persistent_cache.prune(tmp_path, 250)
    assert sorted(p.name for p in build.iterdir()) == ["jit_2", "jit_3"]


@pytest.fixture
def jax_cache_dir():
    """Sets `jax_compilation_cache_dir` for one test (the suite's own is put back)."""
    saved = jax.config.jax_compilation_cache_dir

    def set_dir(folder):
        jax.config.update("jax_compilation_cache_dir", folder)

    yield set_dir
    jax.config.update("jax_compilation_cache_dir", saved)


def test_only_a_sluice_step_is_served(tmp_path, jax_cache_dir):
    jax_cache_dir(None)  # the user has no JAX cache of their own
    cache = persistent_cache.SluiceCache()
    store = _fresh_store(tmp_path)
    cache.put(KEY, b"outside a step")  # a program of the user's own: never written
    assert store.entries() == []
    persistent_cache._local.store = store
    try:
        cache.put(KEY, b"inside a step")
        assert cache.get(KEY) == b"inside a step"
    finally:
        persistent_cache._local.store = None
    assert cache.get(KEY) is None


def test_a_jax_cache_set_later_takes_every_program(tmp_path, jax_cache_dir):
    cache = persistent_cache.SluiceCache()
    jax_cache_dir(str(tmp_path / "users"))
    persistent_cache._local.store = _fresh_store(tmp_path / "ours")
    try:
        cache.put(KEY, b"a step, after the user set JAX's cache")
    finally:
        persistent_cache._local.store = None
    cache.put("jit_users_own-" + "ef" * 32, b"the user's program")
    assert sorted(p.name[:13] for p in (tmp_path / "users").iterdir()) == [
        "jit__step-aba",
        "jit_users_own",
    ]
    assert cache.get(KEY) == b"a step, after the user set JAX's cache"
    assert not (tmp_path / "ours").exists()


def test_a_jax_cache_the_user_configured_is_left_alone(tmp_path):
    # the suite's conftest configures JAX's cache (JAX_COMPILATION_CACHE_DIR), as a user may
    assert jax.config.jax_compilation_cache_dir
    x = sl.placeholder(sl.float32, [2])
    config = sl.SessionConfig(compilation_cache=tmp_path / "ours")
    with sl.Session(config=config) as sess:
        np.testing.assert_allclose(sess.run(x * 3.0 + 1.0, {x: [1.0, 2.0]}), [4.0, 7.0])
    assert not (tmp_path / "ours").exists()


# -- across processes -------------------------------------------------------------------------

JOB = textwrap.dedent(
    """
    import json, sys
    import jax, numpy as np
    import sluice as sl

    events = []
    jax.monitoring.register_event_listener(lambda e, **_: events.append(e))
    rng = np.random.RandomState(0)
    xs, ys = rng.randn(16, 3).astype(np.float32), rng.randn(16, 1).astype(np.float32)
    g = sl.Graph()
    with g.as_default():  # TF1: a session's training step
        x, y = sl.placeholder(sl.float32, [16, 3]), sl.placeholder(sl.float32, [16, 1])
        w = sl.Variable(np.full((3, 1), 0.5, np.float32))
        loss = sl.reduce_mean(sl.square(sl.matmul(x, w) - y))
        train = sl.train.AdamOptimizer(0.1).minimize(loss)
        with sl.Session() as sess:
            sess.run(sl.global_variables_initializer())
            tf1 = [float(sess.run([train, loss], {x: xs, y: ys})[1]) for _ in range(3)]
    sl.utils.set_random_seed(1)  # Keras: fit
    model = sl.Sequential([sl.Input((3,)), sl.layers.Dense(2), sl.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    keras = model.fit(xs, ys, batch_size=8, epochs=2, verbose=0).history["loss"]
    hits = events.count("/jax/compilation_cache/cache_hits")
    print(json.dumps({"tf1": tf1, "keras": keras, "hits": hits}))
    """
)


def _run_job(tmp_path, **env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    environ.pop(persistent_cache.ENV_VAR, None)
    environ.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), PYTHONPATH=str(ROOT), **env)
    out = subprocess.run(
        [sys.executable, "-c", JOB], env=environ, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def _written(folder):
    """Each entry file and its inode: a write (a new file put in place) changes the inode."""
    return {p.name: p.stat().st_ino for p in folder.rglob("*") if p.is_file()}


def _valid(folder):
    store = persistent_cache.Store(folder)
    return all(store.get(name) is not None for name in _written(folder))


@pytest.mark.slow
def test_a_second_process_loads_its_steps(tmp_path):
    folder = tmp_path / "xdg" / "sluice" / "xla"  # the default: in the (fake) user's cache folder
    first, _ = _run_job(tmp_path)
    written = _written(folder)
    steps = [name for name in written if name.startswith("jit__step-")]
    assert len(steps) >= 2 and _valid(folder)  # TF1's step and Keras's train step at least
    second, _ = _run_job(tmp_path)
    assert _written(folder) == written  # nothing compiled again
    assert second["hits"] >= len(written)
    assert second["tf1"] == first["tf1"] and second["keras"] == first["keras"]


@pytest.mark.slow
def test_damaged_entries_are_compiled_again_with_the_same_numbers(tmp_path):
    folder = tmp_path / "moved"
    first, _ = _run_job(tmp_path, SLUICE_COMPILATION_CACHE=str(folder))
    assert not (tmp_path / "xdg").exists()
    entries = sorted(p for p in folder.rglob("*") if p.is_file())
    assert len(entries) >= 2
    for i, entry in enumerate(entries):  # truncated, garbage, another program's entry in turn
        data = entry.read_bytes()
        damaged = [data[: len(data) // 2], os.urandom(len(data)), entries[i - 1].read_bytes()]
        entry.write_bytes(damaged[i % 3])
    damaged = _written(folder)
    second, stderr = _run_job(tmp_path, SLUICE_COMPILATION_CACHE=str(folder))
    assert second["tf1"] == first["tf1"] and second["keras"] == first["keras"]
    assert second["hits"] == 0 and "Traceback" not in stderr
    repaired = _written(folder)
    assert repaired.keys() == damaged.keys() and _valid(folder)  # every entry written again
    third, _ = _run_job(tmp_path, SLUICE_COMPILATION_CACHE=str(folder))
    assert _written(folder) == repaired and third["tf1"] == first["tf1"]


@pytest.mark.slow
def test_turned_off_it_writes_nothing(tmp_path):
    result, stderr = _run_job(tmp_path, SLUICE_COMPILATION_CACHE="off")
    assert result["hits"] == 0 and not (tmp_path / "xdg").exists() and "sluice:" not in stderr
