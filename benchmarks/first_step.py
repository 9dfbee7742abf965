"""The first training step of a fresh process, with sluice's persistent compilation cache empty
(the first process on a machine) and filled (every later one), beside PyTorch's first step.

    python -m benchmarks.first_step [--repeats 3] [--only W1,main] [--torch-python PATH]

Every measurement is a new process (`--child`), as a user's script is. For each workload and
repeat, in turn: sluice with an empty cache (a fresh temporary folder), sluice again on the cache
that process filled, and PyTorch (the same model, `benchmarks.peers`; skipped with a line when
`--torch-python` cannot import torch). Workloads: W1-W4 as TF1 graphs in a session
(`benchmarks.sluice_impl`), and the README's main job (`examples/lstm_text.py`: its model,
optimizer and batch, `fit` on one batch).

Columns, medians over the repeats, in seconds:
  import: `import sluice` (or torch); build: the model and its variables' first values (TF1:
  the graph and the initializer's run; Keras: the model, `compile`); first step: the first
  training step, whose parts are plan (pruning and planning the step: sluice's own Python),
  xla (XLA's compiles, or loading them from the cache: JAX's cache key and reading the entry
  included; JAX's compile events), the run of a step (taken as the second step's time) and
  trace+lower (the rest: sluice's lowering rules traced into a jaxpr, lowered to StableHLO);
  to first step: the process from its start to the end of that step (its interpreter's own
  start-up not counted). The cache leaves plan, trace and lower to every process; it removes
  XLA's compile. programs: how many XLA programs the first step compiled or loaded; loaded: how
  many of them came from the cache.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

START = time.perf_counter()  # the child's own start (its interpreter's start-up not counted)
ROOT = pathlib.Path(__file__).parents[1]
WORKLOADS = ["W1", "W2", "W3", "W4", "main"]
_EVENTS = {"/jax/core/compile/backend_compile_duration": "xla"}  # compiled, or loaded


# -- one process ------------------------------------------------------------------------------


def _sluice_child(workload: str) -> dict:
    t0 = time.perf_counter()
    import jax
    import numpy as np

    import sluice as sl

    imported = time.perf_counter() - t0
    phases: dict[str, float] = collections.defaultdict(float)
    events: list[str] = []
    jax.monitoring.register_event_listener(lambda e, **_: events.append(e))

    def on_duration(event: str, duration: float, **_: Any) -> None:
        if event in _EVENTS:
            phases[_EVENTS[event]] += duration
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    from benchmarks import compile_time  # after sluice's import is timed

    with compile_time.timed_planning(phases):
        t0 = time.perf_counter()
        if workload == "main":
            step = _sluice_main_job(sl, np)
        else:
            step = _sluice_tf1_workload(workload, sl)
        built = time.perf_counter() - t0
        phases.clear()
        events.clear()
        t0 = time.perf_counter()
        loss = step()
        first = time.perf_counter() - t0
        to_first = time.perf_counter() - START
    t0 = time.perf_counter()
    step()
    second = time.perf_counter() - t0
    # JAX's trace events nest (a jit called while tracing another records its own), and a
    # program compiled while tracing counts in both trace and xla: trace + lower is what is left
    # of the first step after planning, compiles and a step's run (the second step's time)
    plan, xla = phases.get("plan", 0.0), phases.get("xla", 0.0)
    return {
        "import": imported,
        "build": built,
        "first step": first,
        "plan": plan,
        "trace+lower": first - plan - xla - second,
        "xla": xla,
        "second step": second,
        "to first step": to_first,
        "programs": events.count("/jax/core/compile/backend_compile_duration"),
        "hits": events.count("/jax/compilation_cache/cache_hits"),
        "loss": float(loss),
    }


def _sluice_tf1_workload(name: str, sl: Any):
    from benchmarks import sluice_impl, workloads

    w = getattr(workloads, name)
    x, y = w.data()
    run, _ = (sluice_impl.vgg_step if name == "W4" else sluice_impl.rnn_step)(w)
    return lambda: run(x, y)


def _main_job_data():
    sys.path.insert(0, str(ROOT / "examples"))
    import numpy as np
    from _data import load_python_docs, next_char_windows

    docs = load_python_docs()
    inputs, targets = next_char_windows(docs.encode(docs.text[:20000]), 64)
    return len(docs.vocabulary), inputs[:64].astype(np.int32), targets[:64].astype(np.int32)


def _sluice_main_job(sl: Any, np: Any):
    """README's main job (examples/lstm_text.py): its model, optimizer and batch of 64."""
    sys.path.insert(0, str(ROOT / "examples"))
    from lstm_text import build_model

    vocabulary, x, y = _main_job_data()
    sl.utils.set_random_seed(0)
    model = build_model(vocabulary, 64, 192, 32)
    model.compile(
        optimizer=sl.optimizers.Adam(1e-2, global_clipnorm=5.0),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return lambda: model.fit(x, y, batch_size=64, epochs=1, verbose=0).history["loss"][-1]


def _torch_child(workload: str) -> dict:
    t0 = time.perf_counter()
    try:
        import torch
    except ImportError as err:
        return {"skipped": f"PyTorch cannot be imported here ({err})"}
    imported = time.perf_counter() - t0
    t0 = time.perf_counter()
    if workload == "main":
        step = _torch_main_job(torch)
    else:
        from benchmarks import peers, workloads

        w = getattr(workloads, workload)
        x, y = w.data()
        run = (peers._torch_vgg if workload == "W4" else peers._torch_rnn)(w)
        step = lambda: run(x, y)  # noqa: E731
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    loss = step()
    first = time.perf_counter() - t0
    to_first = time.perf_counter() - START
    t0 = time.perf_counter()
    step()
    second = time.perf_counter() - t0
    return {
        "import": imported,
        "build": built,
        "first step": first,
        "second step": second,
        "to first step": to_first,
        "loss": float(loss),
    }


def _torch_main_job(torch: Any):
    vocabulary, x, y = _main_job_data()
    nn = torch.nn
    torch.manual_seed(0)

    class CharLstm(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocabulary, 32)
            self.lstm = nn.LSTM(32, 192, batch_first=True)
            self.dense = nn.Linear(192, vocabulary)

        def forward(self, ids):
            return self.dense(self.lstm(self.embedding(ids))[0])

    model = CharLstm()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    inputs, labels = torch.from_numpy(x).long(), torch.from_numpy(y).long()

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(inputs).reshape(-1, vocabulary), labels.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        return loss.item()

    return step


# -- the table ---------------------------------------------------------------------------------


def _spawn(python: str, framework: str, workload: str, cache: pathlib.Path | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["SLUICE_COMPILATION_CACHE"] = str(cache) if cache is not None else "off"
    args = [python, "-m", "benchmarks.first_step", "--child", framework, workload]
    out = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


COLUMNS = ["import", "build", "first step", "plan", "trace+lower", "xla", "second step"]
COLUMNS += ["to first step"]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", default=",".join(WORKLOADS), help="of " + ",".join(WORKLOADS))
    p.add_argument("--torch-python", default=sys.executable, help="a Python that has torch")
    p.add_argument("--json", help="write the measurements here too")
    p.add_argument("--child", nargs=2, metavar=("FRAMEWORK", "WORKLOAD"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        framework, workload = args.child
        result = (_torch_child if framework == "pytorch" else _sluice_child)(workload)
        print(json.dumps(result))
        return
    chosen = [w for w in args.only.split(",") if w]
    unknown = set(chosen) - set(WORKLOADS)
    if unknown:
        p.error(f"unknown workloads {sorted(unknown)}; expected some of {WORKLOADS}")
    rows: dict[tuple[str, str], list[dict]] = collections.defaultdict(list)
    torch_note = None
    for repeat in range(args.repeats):
        for workload in chosen:
            folder = pathlib.Path(tempfile.mkdtemp(prefix="sluice-first-step-"))
            try:
                cache = folder / "cache"
                rows[(workload, "sluice, 1st process")].append(
                    _spawn(sys.executable, "sluice", workload, cache)
                )
                rows[(workload, "sluice, 2nd process")].append(
                    _spawn(sys.executable, "sluice", workload, cache)
                )
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            if torch_note is None:
                result = _spawn(args.torch_python, "pytorch", workload, None)
                if "skipped" in result:
                    torch_note = result["skipped"]
                else:
                    rows[(workload, "pytorch")].append(result)
            print(f"  repeat {repeat + 1}/{args.repeats}: {workload} done", flush=True)
    if torch_note:
        print(f"  (no pytorch rows: {torch_note}; pass --torch-python)")
    table = {key: _medians(results) for key, results in rows.items()}
    _print(table, args.repeats)
    if args.json:
        pathlib.Path(args.json).write_text(
            json.dumps({f"{w} | {f}": r for (w, f), r in rows.items()}, indent=1)
        )


def _medians(results: list[dict]) -> dict:
    keys = [k for k in results[0] if isinstance(results[0][k], (int, float))]
    return {k: statistics.median(r[k] for r in results) for k in keys}


def _print(table: dict, repeats: int) -> None:
    print(f"\nFirst training step of a fresh process, seconds (medians of {repeats})")
    columns = "".join(f"{c:>14}" for c in COLUMNS)
    header = f"{'workload':8} {'process':20}{columns}{'programs':>9}{'loaded':>7}"
    print(header)
    print("-" * len(header))
    for (workload, framework), m in table.items():
        cells = "".join(f"{m[c]:14.2f}" if c in m else f"{'':>14}" for c in COLUMNS)
        hits = f"{int(m['programs']):9d}{int(m['hits']):7d}" if "hits" in m else ""
        print(f"{workload:8} {framework:20}{cells}{hits}")
    print("\nWhat the cache removes from the first step (1st process -> 2nd process):")
    for workload in dict.fromkeys(w for w, _ in table):
        cold = table.get((workload, "sluice, 1st process"))
        warm = table.get((workload, "sluice, 2nd process"))
        torch = table.get((workload, "pytorch"))
        if not (cold and warm):
            continue
        saved = cold["first step"] - warm["first step"]
        line = (
            f"  {workload}: {cold['first step']:.2f} s -> {warm['first step']:.2f} s "
            f"({saved / cold['first step']:.0%} removed); left: plan {warm['plan']:.2f} s, "
            f"trace+lower {warm['trace+lower']:.2f} s, load {warm['xla']:.2f} s, "
            f"a step's run {warm['second step']:.2f} s"
        )
        if torch:
            line += f"; pytorch's first step {torch['first step']:.2f} s"
        print(line)


if __name__ == "__main__":
    main()
