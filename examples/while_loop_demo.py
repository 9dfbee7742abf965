"""A tour of sluice's graph runtime: loops, branches and variables, run by the interpreted engine.

Run: python examples/while_loop_demo.py
"""

import time

import numpy as np

import sluice as sl


def newton_sqrt(a: float, tolerance: float = 1e-6):
    """sqrt(a) by Newton's method: a data-dependent number of while-loop iterations."""
    x0 = sl.constant(a, sl.float64)
    target = sl.constant(a, sl.float64)

    def not_converged(i, x):
        return sl.abs(x * x - target) > tolerance

    def step(i, x):
        return i + 1, 0.5 * (x + target / x)

    return sl.while_loop(not_converged, step, (sl.constant(0), x0))


def collatz_steps(n):
    """Steps of the Collatz map until 1: a cond inside a while loop."""

    def body(k, steps):
        k = sl.cond(sl.equal(k % 2, 0), lambda: k // 2, lambda: 3 * k + 1)
        return k, steps + 1

    return sl.while_loop(lambda k, s: k > 1, body, (n, sl.constant(0)))[1]


def rnn_forward(inputs, w_x, w_h):
    """h_t = tanh(x_t W_x + h_{t-1} W_h) over a sequence fed at run time."""
    steps = sl.shape(inputs)[0]
    h0 = sl.zeros([1, 8])

    def body(t, h):
        x_t = sl.expand_dims(sl.gather(inputs, t), 0)
        return t + 1, sl.tanh(sl.matmul(x_t, w_x) + sl.matmul(h, w_h))

    return sl.while_loop(lambda t, h: t < steps, body, (sl.constant(0), h0))[1]


def main():
    rng = np.random.default_rng(0)
    n = sl.placeholder(sl.int32, [], name="n")
    sequence = sl.placeholder(sl.float32, [None, 4], name="sequence")
    w_x = sl.Variable(rng.normal(size=[4, 8]).astype(np.float32) * 0.5, name="w_x")
    w_h = sl.Variable(rng.normal(size=[8, 8]).astype(np.float32) * 0.5, name="w_h")
    total = sl.Variable(0, name="total_steps")

    iterations, root = newton_sqrt(2.0)
    steps = collatz_steps(n)
    record = total.assign_add(steps)
    final_h = rnn_forward(sequence, w_x, w_h)

    with sl.Session() as sess:
        sess.run(sl.global_variables_initializer())
        it, r = sess.run([iterations, root])
        print(
            f"sqrt(2) by Newton's method: {r:.12f} after {it} iterations (numpy: {np.sqrt(2):.12f})"
        )
        for value in (6, 7, 27):
            print(f"Collatz steps from {value}: {sess.run(steps, {n: value})}")
            sess.run(record, {n: value})
        print(f"total Collatz steps recorded in a variable: {sess.run(total)}")
        seq = rng.normal(size=[20, 4]).astype(np.float32)
        start = time.perf_counter()
        h = sess.run(final_h, {sequence: seq})
        elapsed = time.perf_counter() - start
        ref = np.zeros([1, 8], np.float32)
        wx, wh = sess.run([w_x, w_h])
        for x in seq:
            ref = np.tanh(x[None] @ wx + ref @ wh)
        print(
            f"RNN over 20 steps: |h - numpy| = {np.abs(h - ref).max():.2e} ({elapsed * 1e3:.1f} ms)"
        )


if __name__ == "__main__":
    main()
