"""One training step of a 100k x 128 embedding, with its gradient as IndexedSlices ("sparse")
and forced dense ("dense", what every embedding did before gather's gradient became
IndexedSlices: a [100k, 128] gradient and an update of every row).

The model: a batch of 256 sequences of 20 ids looks up rows of a [100000, 128] table, their mean
goes through a [128, 1] layer, the loss is the mean squared error. "dense" converts the table's
gradient with `sl.convert_to_tensor` before `apply_gradients`; "sparse" passes it as it is.
Prints the median and the minimum step time in milliseconds per optimizer, path and engine.

Run: python benchmarks/embedding_sparse.py [--repeats 20] [--engines compiled interpreted]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import sluice as sl

VOCAB, DIM, BATCH, LENGTH = 100_000, 128, 256, 20
OPTIMIZERS = {
    "GradientDescent": lambda: sl.train.GradientDescentOptimizer(0.1),
    "Adagrad": lambda: sl.train.AdagradOptimizer(0.1),
    "Momentum": lambda: sl.train.MomentumOptimizer(0.1, 0.9),
}


def build(optimizer: str, dense: bool) -> tuple:
    g = sl.Graph()
    with g.as_default():
        table = sl.Variable(sl.random_uniform([VOCAB, DIM], -0.05, 0.05, seed=1), name="table")
        w = sl.Variable(sl.random_normal([DIM, 1], stddev=0.1, seed=2), name="w")
        ids = sl.placeholder(sl.int32, [BATCH, LENGTH], name="ids")
        y = sl.placeholder(sl.float32, [BATCH, 1], name="y")
        pooled = sl.reduce_mean(sl.nn.embedding_lookup(table, ids), axis=1)
        loss = sl.reduce_mean(sl.square(sl.matmul(pooled, w) - y))
        opt = OPTIMIZERS[optimizer]()
        grads_and_vars = opt.compute_gradients(loss)
        assert isinstance(grads_and_vars[0][0], sl.IndexedSlices)
        if dense:
            grads_and_vars = [(sl.convert_to_tensor(gr), v) for gr, v in grads_and_vars]
        train = opt.apply_gradients(grads_and_vars)
        init = sl.global_variables_initializer()
    return g, ids, y, loss, train, init


def time_steps(optimizer: str, dense: bool, engine: str, repeats: int) -> list[float]:
    g, ids, y, loss, train, init = build(optimizer, dense)
    rng = np.random.default_rng(0)
    feeds = [
        {
            ids: rng.integers(0, VOCAB, size=(BATCH, LENGTH)).astype(np.int32),
            y: rng.normal(size=(BATCH, 1)).astype(np.float32),
        }
        for _ in range(4)
    ]
    times = []
    with sl.Session(graph=g, config=sl.SessionConfig(engine=engine)) as sess:
        sess.run(init)
        for feed in feeds[:2]:  # warm-up: plans and compiles
            sess.run([loss, train], feed)
        for i in range(repeats):
            start = time.perf_counter()
            # the loss comes back with the whole compiled step, so the time is the step's
            sess.run([loss, train], feeds[i % len(feeds)])
            times.append((time.perf_counter() - start) * 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--engines", nargs="+", default=["compiled", "interpreted"])
    parser.add_argument("--optimizers", nargs="+", default=list(OPTIMIZERS))
    args = parser.parse_args()
    rows = []
    for engine in args.engines:
        for optimizer in args.optimizers:
            result = {"engine": engine, "optimizer": optimizer}
            for path in ("dense", "sparse"):
                times = time_steps(optimizer, path == "dense", engine, args.repeats)
                result[f"{path}_median_ms"] = round(statistics.median(times), 2)
                result[f"{path}_min_ms"] = round(min(times), 2)
            result["speedup"] = round(result["dense_median_ms"] / result["sparse_median_ms"], 1)
            rows.append(result)
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
