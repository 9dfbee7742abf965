"""Runs a script as the processes of one jax.distributed job and gives back what each printed.

Tests call `run_processes(script, args)` rather than the launcher, to see each process's stdout
and stderr apart. It starts, waits and stops the processes with the launcher's own functions,
so it never hangs: on a timeout or an error it stops every process group and fails with the
end of every process's stderr.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence

from sluice._keras.distribution.launch import (
    child_env,
    free_port,
    start_process,
    stop_all,
    wait_all,
)

STDERR_TAIL_CHARS = 3000


@dataclasses.dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_processes(
    script_path: str | os.PathLike,
    args: Sequence[str] = (),
    processes: int = 2,
    cpu_devices: int | None = 2,
    timeout: float = 90,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> list[Result]:
    """Runs `python script_path *args` as `processes` processes of one job, each on
    `cpu_devices` virtual CPU devices (not the 4 that conftest.py gives the test process).

    Raises AssertionError, with every process's exit code and stderr tail, after `timeout`
    seconds, or when a process exits with an error and `check` is true (then the others are
    stopped at once). Returns one Result per process, in process-id order.
    """
    port = free_port()
    children, outputs = [], []
    code = None
    try:
        for i in range(processes):
            child = start_process(
                [os.fspath(script_path), *args],
                child_env(i, processes, port, cpu_devices, env),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            children.append(child)
            # read both pipes while the process runs: a full pipe would block it
            outputs.append((_PipeReader(child.stdout), _PipeReader(child.stderr)))
        code = wait_all(children, timeout)
    finally:
        stop_all(children)
        results = [
            Result(c.returncode, out.text(), err.text()) for c, (out, err) in zip(children, outputs)
        ]
    if code is None:
        raise AssertionError(f"timed out after {timeout} s\n" + _report(results))
    if check and code != 0:
        raise AssertionError(f"a process exited with {code}\n" + _report(results))
    return results


class _PipeReader:
    """Reads a pipe to its end on a thread; `text()` waits for it (a few seconds at most,
    once the writers are gone) and decodes it."""

    def __init__(self, pipe):
        self._chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe):
        with pipe:
            for chunk in iter(lambda: pipe.read1(65536), b""):
                self._chunks.append(chunk)

    def text(self) -> str:
        self._thread.join(timeout=5.0)
        return b"".join(self._chunks).decode(errors="replace")


def _report(results: list[Result]) -> str:
    return "\n".join(
        f"--- process {i}: exit code {r.returncode}, stderr ends with:\n"
        f"{r.stderr[-STDERR_TAIL_CHARS:]}"
        for i, r in enumerate(results)
    )
