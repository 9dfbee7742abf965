"""The launcher and the test helper: a 2-process x 2-device job sums a sharded batch; an error
in one process, or a timeout, stops the others (their subprocesses too), fast."""

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from sluice._keras.distribution.launch import child_env
from tests.distribution.multiprocess import run_processes

SHARDED_SUM = """
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

jax.distributed.initialize(os.environ["SLUICE_COORDINATOR"],
                           int(os.environ["SLUICE_NUM_PROCESSES"]),
                           int(os.environ["SLUICE_PROCESS_ID"]))
assert (jax.device_count(), jax.local_device_count()) == (4, 2), jax.devices()
sharding = NamedSharding(Mesh(np.array(jax.devices()), ("batch",)), PartitionSpec("batch"))
batch = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
x = jax.make_array_from_callback(batch.shape, sharding, lambda index: batch[index])
print(f"sum={float(jax.jit(jnp.sum)(x))}")
"""

PRINT_JOB = """
import os
import sys

print(os.environ["SLUICE_PROCESS_ID"], os.environ["SLUICE_NUM_PROCESSES"],
      os.environ["SLUICE_COORDINATOR"], os.environ.get("JAX_PLATFORMS"),
      os.environ.get("XLA_FLAGS"), *sys.argv[1:])
"""


def write(path: pathlib.Path, source: str) -> pathlib.Path:
    path.write_text(textwrap.dedent(source))
    return path


def run_launcher(*args, cwd=None, timeout=30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sluice.distribution.launch", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def running(pid: int) -> bool:
    """Whether `pid` is alive: it exists and, where /proc can tell, is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:  # no /proc (macOS), or it has just gone: the next call tells
        return True


def _without_other_xla_flags(line: str) -> str:
    """`line` without the XLA flags conftest.py sets besides the device count (the launcher
    passes those on unchanged)."""
    others = ("--xla_backend_", "--xla_cpu_use_fusion_emitters")
    return " ".join(w for w in line.split(" ") if not w.startswith(others))


def test_two_processes_sum_a_batch_sharded_over_four_devices(tmp_path):
    result = run_launcher(
        "--processes", 2, "--cpu-devices", 2, write(tmp_path / "s.py", SHARDED_SUM)
    )
    assert result.returncode == 0, result.stderr
    expected = f"sum={float(sum(range(24)))}"
    assert expected in result.stdout.splitlines()  # process 0, as it printed it
    assert f"[process 1] {expected}" in result.stdout.splitlines()


def test_a_module_gets_its_arguments_and_the_job_environment(tmp_path):
    write(tmp_path / "print_job.py", PRINT_JOB)
    result = run_launcher(
        "--processes",
        2,
        "--cpu-devices",
        3,
        "--port",
        12345,
        "-m",
        "print_job",
        "--flag",
        "x",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    job = "2 127.0.0.1:12345 cpu --xla_force_host_platform_device_count=3 --flag x"
    lines = [_without_other_xla_flags(line) for line in result.stdout.splitlines()]
    assert sorted(lines) == [f"0 {job}", f"[process 1] 1 {job}"]


def test_an_error_in_one_process_stops_the_others_and_their_subprocesses(tmp_path):
    pid_file = tmp_path / "sleeper.pid"
    script = write(
        tmp_path / "s.py",
        f"""
        import os, pathlib, subprocess, sys, time
        pid_file = pathlib.Path({str(pid_file)!r})
        if os.environ["SLUICE_PROCESS_ID"] == "0":
            sleeper = subprocess.Popen(["sleep", "60"])
            pid_file.write_text(str(sleeper.pid))
            time.sleep(60)
        deadline = time.monotonic() + 10
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        sys.exit(3)
        """,
    )
    start = time.monotonic()
    result = run_launcher("--processes", 2, script)
    sleeper = int(pid_file.read_text())
    try:
        assert result.returncode == 3, result.stderr
        assert time.monotonic() - start < 15
        deadline = time.monotonic() + 5
        while running(sleeper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not running(sleeper), "process 0's subprocess outlived the job"
    finally:
        if running(sleeper):
            os.kill(sleeper, signal.SIGKILL)


def test_the_timeout_stops_every_process_with_124(tmp_path):
    script = write(tmp_path / "s.py", "import time\ntime.sleep(60)\n")
    start = time.monotonic()
    result = run_launcher("--processes", 2, "--timeout", 1, script)
    assert result.returncode == 124
    assert "timeout" in result.stderr
    assert time.monotonic() - start < 15


def test_run_processes_gives_each_process_its_output(tmp_path):
    results = run_processes(
        write(tmp_path / "s.py", PRINT_JOB), ["a"], processes=3, cpu_devices=2, timeout=20
    )
    assert [r.returncode for r in results] == [0, 0, 0]
    # not the 4 devices conftest.py gives this process
    flags = "--xla_force_host_platform_device_count=2"
    printed = [_without_other_xla_flags(r.stdout).split() for r in results]
    assert [words[:2] + words[3:] for words in printed] == [
        [str(i), "3", "cpu", flags, "a"] for i in range(3)
    ]


def test_run_processes_fails_with_the_stderr_of_a_failed_process(tmp_path):
    script = write(
        tmp_path / "s.py",
        """
        import os, sys, time
        if os.environ["SLUICE_PROCESS_ID"] == "1":
            sys.exit("boom in process 1")
        time.sleep(60)
        """,
    )
    start = time.monotonic()
    with pytest.raises(AssertionError, match="boom in process 1") as failure:
        run_processes(script, timeout=20)
    assert "process 1: exit code 1" in str(failure.value)
    assert time.monotonic() - start < 15


def test_run_processes_fails_after_its_timeout(tmp_path):
    script = write(
        tmp_path / "s.py",
        "import sys, time\nprint('waiting', file=sys.stderr, flush=True)\ntime.sleep(60)\n",
    )
    with pytest.raises(AssertionError, match="(?s)timed out after 1 s.*waiting"):
        run_processes(script, timeout=1)


def test_child_env_replaces_the_device_count_and_keeps_other_flags():
    env = child_env(
        0,
        2,
        1,
        cpu_devices=2,
        env={
            "XLA_FLAGS": "--xla_force_host_platform_device_count=4 --xla_cpu_enable_fast_math=false"
        },
    )
    assert env["XLA_FLAGS"].split() == [
        "--xla_cpu_enable_fast_math=false",
        "--xla_force_host_platform_device_count=2",
    ]
    untouched = child_env(0, 2, 1, env={"XLA_FLAGS": "--a", "JAX_PLATFORMS": "gpu"})
    assert (untouched["XLA_FLAGS"], untouched["JAX_PLATFORMS"]) == ("--a", "gpu")


HALF_LINES = """
import os
import sys
import time

if os.environ["SLUICE_PROCESS_ID"] == "0":
    sys.stdout.write("zero-")  # half a line, flushed: as an unbuffered print writes it
    sys.stdout.flush()
    time.sleep(1.0)
    sys.stdout.write("line\\n")
else:
    time.sleep(0.3)
    print("one", flush=True)
"""


def test_lines_of_two_processes_do_not_interleave_in_captured_output(tmp_path):
    # process 0 writes half a line, waits while process 1 writes a whole one, then ends its own
    script = write(tmp_path / "half.py", HALF_LINES)
    result = run_launcher("--processes", 2, script)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["[process 1] one", "zero-line"]
