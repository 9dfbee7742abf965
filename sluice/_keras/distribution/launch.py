"""Run one script as N cooperating processes on this machine: a jax.distributed job for one host.

Usage::

    python -m sluice.distribution.launch --processes 2 [--cpu-devices 2] [--port P]
        [--timeout SECONDS] script.py [script args...]
    python -m sluice.distribution.launch --processes 2 -m package.module [module args...]

The launcher starts `python script.py args...` N times. Process i gets

    SLUICE_COORDINATOR=127.0.0.1:PORT   (a free port, or --port)
    SLUICE_NUM_PROCESSES=N
    SLUICE_PROCESS_ID=i

which `sluice.distribution.initialize()` reads, so the script needs no arguments of its own to
join the job. `--cpu-devices K` runs every process on K virtual CPU devices (JAX_PLATFORMS=cpu,
`--xla_force_host_platform_device_count=K` in XLA_FLAGS, other XLA flags kept): N x K devices in
all, to try multi-host code on a laptop.

Process 0 writes to the terminal as it would alone; every other process's lines are prefixed
"[process i] ". Where the launcher's output is not a terminal (a log file, a pipe), process 0's
lines are copied too, so that lines of two processes never interleave mid-line. The launcher
exits with 0 when every process does; as soon as one exits with an error it stops the others
(SIGTERM to each process group, SIGKILL after a grace period, so subprocesses of the script go
too) and exits with that process's code. `--timeout` stops all and
exits with 124; Ctrl-C stops all and exits with 130, a SIGTERM to the launcher with 143.

From Python, `launch(["script.py", "--epochs", "3"], processes=2, cpu_devices=2)` does the same
and returns the exit code.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

from sluice._export import export_command

HOST = "127.0.0.1"
TIMEOUT_EXIT_CODE = 124  # what coreutils `timeout` exits with
INTERRUPT_EXIT_CODE = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
_DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
_output_lock = threading.Lock()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it).

    Another program may take it before the coordinator binds it; on one machine that is rare.

    >>> 0 < free_port() < 65536
    True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def child_env(
    process_id: int,
    processes: int,
    port: int,
    cpu_devices: int | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of process `process_id`: os.environ, then `env`, then the job's variables.

    With `cpu_devices`, any device count already in XLA_FLAGS is replaced (a test run's count
    must not leak into its children); the other XLA flags are kept.

    >>> flags = "--xla_force_host_platform_device_count=4 --xla_dump_to=/tmp"
    >>> e = child_env(1, 2, 1234, cpu_devices=2, env={"XLA_FLAGS": flags})
    >>> e["SLUICE_COORDINATOR"], e["SLUICE_PROCESS_ID"], e["XLA_FLAGS"]
    ('127.0.0.1:1234', '1', '--xla_dump_to=/tmp --xla_force_host_platform_device_count=2')
    """
    result = {**os.environ, **(env or {})}
    result.update(
        SLUICE_COORDINATOR=f"{HOST}:{port}",
        SLUICE_NUM_PROCESSES=str(processes),
        SLUICE_PROCESS_ID=str(process_id),
        PYTHONUNBUFFERED="1",  # lines show up as they are printed, not when a buffer fills
    )
    if cpu_devices is not None:
        flags = [
            f for f in result.get("XLA_FLAGS", "").split() if not f.startswith(_DEVICE_COUNT_FLAG)
        ]
        result["XLA_FLAGS"] = " ".join([*flags, f"{_DEVICE_COUNT_FLAG}={cpu_devices}"])
        result["JAX_PLATFORMS"] = "cpu"
    return result


def start_process(
    argv_of_child: Sequence[str], env: Mapping[str, str], **popen_kwargs
) -> subprocess.Popen:
    """Starts `python *argv_of_child` in a session of its own, so `stop_all` reaches its
    subprocesses too and a Ctrl-C at the terminal reaches only the launcher."""
    return subprocess.Popen(
        [sys.executable, *argv_of_child], env=dict(env), start_new_session=True, **popen_kwargs
    )


def wait_all(processes: Sequence[subprocess.Popen], timeout: float | None = None) -> int | None:
    """Waits until every process has exited with 0 (returns 0), or one has not (returns its
    code, negative for a signal, without waiting for the others), or `timeout` seconds have
    passed (returns None)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        codes = [p.poll() for p in processes]
        failed = [c for c in codes if c not in (None, 0)]
        if failed:
            return failed[0]
        if all(c == 0 for c in codes):
            return 0
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def stop_all(processes: Sequence[subprocess.Popen], grace: float = 5.0) -> None:
    """SIGTERM to every process group, then SIGKILL to those still running after `grace`
    seconds; returns when every process has been reaped."""
    _signal_groups(processes, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in processes:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    # also the groups whose leader is gone: a subprocess it left behind may ignore SIGTERM
    _signal_groups(processes, signal.SIGKILL)
    for p in processes:
        p.wait()


def _signal_groups(processes: Sequence[subprocess.Popen], sig: signal.Signals) -> None:
    for p in processes:
        try:
            os.killpg(p.pid, sig)  # the group id is the pid: start_new_session made it leader
        except (ProcessLookupError, PermissionError):
            pass  # the whole group has exited already


def launch(
    argv_of_child: list[str],
    processes: int,
    cpu_devices: int | None = None,
    port: int | None = None,
    timeout: float | None = None,
    env: dict | None = None,
) -> int:
    """Runs `python *argv_of_child` as `processes` processes of one job; see the module docstring.

    Args:
        argv_of_child: what follows `python` on each command line: `["script.py", *args]` or
            `["-m", "package.module", *args]`.
        processes: how many processes the job has.
        cpu_devices: run each process on this many virtual CPU devices; None leaves the
            platform and XLA_FLAGS as they are.
        port: the coordinator's port on 127.0.0.1; None picks a free one.
        timeout: seconds before every process is stopped; None waits for ever.
        env: variables added to os.environ for the processes.

    Returns:
        0 when every process exits with 0; otherwise the code of the first that did not
        (128 + N for one killed by signal N), 124 after `timeout`, 130 after Ctrl-C.
    """
    port = free_port() if port is None else port
    children, copiers = [], []
    try:
        for i in range(processes):
            variables = child_env(i, processes, port, cpu_devices, env)
            if i == 0 and _is_terminal(sys.stdout) and _is_terminal(sys.stderr):
                children.append(start_process(argv_of_child, variables))
                continue
            # output that is not a terminal (a log, a pipe) is read back line by line: a
            # process 0 writing to it directly could land mid-line among the copied ones (an
            # unbuffered print writes its text and its newline apart)
            child = start_process(
                argv_of_child, variables, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            children.append(child)
            prefix = f"[process {i}] " if i else ""
            copiers += [
                _copy_lines(child.stdout, sys.stdout, prefix),
                _copy_lines(child.stderr, sys.stderr, prefix),
            ]
        code = wait_all(children, timeout)
    except KeyboardInterrupt:
        code = -signal.SIGINT
    finally:
        stop_all(children)
        for t in copiers:
            t.join(timeout=2.0)  # the last lines of the output; never hang on a stray writer
    if code is None:
        print(
            f"sluice.distribution.launch: stopped after the {timeout} s timeout",
            file=sys.stderr,
        )
        return TIMEOUT_EXIT_CODE
    return 128 - code if code < 0 else code


def _is_terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def _copy_lines(source: IO[bytes], target: IO[str], prefix: str) -> threading.Thread:
    def copy():
        for line in iter(source.readline, b""):
            with _output_lock:  # whole lines, never two processes' lines interleaved
                target.write(prefix + line.decode(errors="replace"))
                target.flush()
        source.close()

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit code (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m sluice.distribution.launch",
        description="Run a script as N processes of one jax.distributed job on this machine.",
    )
    parser.add_argument(
        "--processes", type=int, required=True, metavar="N", help="number of processes"
    )
    parser.add_argument(
        "--cpu-devices",
        type=int,
        default=None,
        metavar="K",
        help="virtual CPU devices per process (sets JAX_PLATFORMS=cpu)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        metavar="PORT",
        help="coordinator port on 127.0.0.1 (default: a free one)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop every process after this many seconds and exit with 124",
    )
    parser.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        metavar="MODULE ...",
        help="run a module, as `python -m`, instead of a script",
    )
    parser.add_argument(
        "script",
        nargs=argparse.REMAINDER,
        metavar="script.py ...",
        help="the script and its arguments",
    )
    args = parser.parse_args(argv)
    script = args.script[1:] if args.script[:1] == ["--"] else args.script
    if args.module is not None:
        if not args.module or script:
            parser.error("-m needs a module name, and no script beside it")
        argv_of_child = ["-m", *args.module]
    elif script:
        argv_of_child = script
    else:
        parser.error("give a script to run (or -m module)")
    if args.processes < 1:
        parser.error("--processes must be at least 1")

    # a SIGTERM to the launcher (a scheduler, `timeout`) stops the processes too: SystemExit
    # runs launch's cleanup on its way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    return launch(argv_of_child, args.processes, args.cpu_devices, args.port, args.timeout)


# `python -m sluice.distribution.launch` runs this module (named here, not by __name__, which is
# "__main__" when it runs)
export_command("sluice._keras.distribution.launch", "distribution.launch")


if __name__ == "__main__":
    sys.exit(main())
