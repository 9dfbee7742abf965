"""The peers' steps in a process of their own: `--peers` rows as their users run them.

`python -m benchmarks --peers` times PyTorch (and TF1) in its own process too, beside the rows
in the benchmark's process. There, importing sluice has tuned the C allocator
(sluice/_host_memory.py), which speeds up PyTorch's LSTM steps as well; a PyTorch user's
process has no such setting. This module is that process: it imports the peers and NumPy only,
builds the same workload on the same data, and runs one timed step per request, so that the
parent still alternates these rows with all the others.

Protocol, one line each way: the child prints `ready` and its rows' names, tab-separated; the
parent writes a row's name, the child runs one step of it and prints its wall time in ms (or
`error <text>`); an empty line ends the child.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from typing import Any

from benchmarks import peers, workloads


class Timed(float):
    """A step's time in ms as measured where it ran (time_rows takes it instead of its own)."""


class PeerProcess:
    """A child process running the peers of one workload; `run(name)` is one of its rows."""

    def __init__(self, command: list[str]):
        self.child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        first = self.child.stdout.readline().rstrip("\n").split("\t")
        self.names = first[1:] if first[:1] == ["ready"] else []

    @classmethod
    def for_workload(
        cls, workload_name: str, torch_threads: int = 0, flush_denormal: bool = False
    ) -> PeerProcess:
        """The child for one workload of benchmarks.workloads (`W1`, ...)."""
        command = [sys.executable, "-m", "benchmarks.peer_process", workload_name]
        return cls(command + [str(torch_threads), "1" if flush_denormal else "0"])

    def run(self, name: str) -> Any:
        def step(*_: Any) -> Timed:
            self.child.stdin.write(name + "\n")
            reply = self.child.stdout.readline().strip()
            if not reply or reply.startswith("error"):
                raise RuntimeError(f"peer process, row {name!r}: {reply or 'it exited'}")
            return Timed(reply)

        return step

    def close(self) -> None:
        if self.child.poll() is None:
            self.child.stdin.write("\n")
            self.child.stdin.flush()
            try:
                self.child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.child.kill()


def main(argv: list[str]) -> None:
    workload = getattr(workloads, argv[0])
    if int(argv[1]):
        peers.set_torch_threads(int(argv[1]))
    if argv[2] == "1":
        peers.set_torch_flush_denormal()
    is_rnn = hasattr(workload, "cell")
    with contextlib.redirect_stdout(sys.stderr):  # a missing peer's note is not the protocol's
        runs = (peers.rnn_runs if is_rnn else peers.vgg_runs)(workload)
    x, y = workload.data()
    print("\t".join(["ready", *runs]), flush=True)
    for line in sys.stdin:
        name = line.strip()
        if not name:
            break
        try:
            start = time.perf_counter()
            runs[name](x, y)  # each peer's step ends with its loss on the host
            print(f"{(time.perf_counter() - start) * 1e3:.6f}", flush=True)
        except Exception as err:  # noqa: BLE001 (reported to the parent, which raises)
            print(f"error {type(err).__name__}: {err}".replace("\n", " "), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
