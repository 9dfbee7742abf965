"""FLOPs of one training step, counted from a workload's shapes, and the machine's matmul rate.

`python -m benchmarks` divides these counts by each row's step time (GFLOP/s) and by the rate of
one large float32 matmul measured in the same run, so each row says how far it is from what the
machine can do.

Counting rules. One multiply-add is 2 FLOPs. We count the work the model's maths needs, the
same for every framework whatever its kernels do:

- A matmul [m, k] @ [k, n] is 2mkn. Its backward is one matmul of the same size for each
  operand that needs a gradient: two for an activation times a weight, one when the other
  operand is the input batch (no framework here needs the gradient of the data).
- RNNs of T steps, batch B, I inputs, H units: each step's input and recurrent matmuls, all T
  steps counted alike (the first step's recurrent matmul on the zero state too; it is 1/T).
  LSTM (TF1 `BasicLSTMCell`; Keras's `LSTM` and PyTorch's `nn.LSTM` do the same matmuls
  split as x @ W_x + h @ W_h): forward [x_t, h] @ W with W [I+H, 4H], 2B(I+H)4H. Backward: the
  weight gradient [x_t, h]^T @ dz, 2B(I+H)4H, and dh = dz @ W_h^T, 2B(4H)H (no dx_t).
  GRU (TF1 `GRUCell`): forward [x_t, h] @ W_g with W_g [I+H, 2H] and [x_t, r*h] @ W_c with
  W_c [I+H, H], 2B(I+H)3H; backward the weight gradients (the same again) and the recurrent
  data gradients 2B(3H)H. A weight gradient summed over the steps (dW += a_t^T @ g_t) is one
  matmul over T*B rows: 2mkn already counts its additions, so the per-step accumulation is not
  counted again. The Dense layer on the last output is one matmul and its backward two.
- Convolutions (3x3, SAME, stride 1, [H, W, Cin] -> [H, W, Cout]): 2*H*W*Cin*Cout*9 per image
  forward; backward the kernel gradient the same and the input gradient the same, except for
  the first convolution, whose input is the data.
- Elementwise work is ignored: an LSTM's gates (sigmoids, tanhs, products), bias adds, ReLU,
  pooling, softmax and cross entropy. An LSTM cell's gates are about 15 FLOPs per unit and
  step forward and 30 backward, against 24(I+H)-8I for its matmuls: 1.3% of W1, 0.7% of W2.
- The update: Adam 12 FLOPs per parameter (two moment updates 3 + 4, bias corrections 2,
  sqrt, add eps, divide, scale by the rate and subtract: counted as 12 in all), SGD with
  momentum 4 (v = mu*v + g, p -= lr*v). Under 0.1% of every workload here.

Against XLA's own count (`cost_analysis()["flops"]` of the hand-written JAX step in
`benchmarks/jax_baseline.py`, jax 0.10.2 on the CPU; `python -m benchmarks` stores it under each
workload's "flops" in `benchmarks/results.json`):

- XLA counts a `while` loop's body once, whatever its trip count: the compiled W1 step counts
  17.5 MFLOP, 1.10x our count for a single time step (15.9 MFLOP), not our 735 MFLOP for 50.
- With the scan unrolled (the lowered module of `jax_baseline.rnn_step(w, unroll=True)`), XLA
  counts every step: 1.09x ours on W1, 1.06x on W2, 1.09x on W3. The difference is the
  elementwise work we ignore (about 1%) and the input part of the gradient of the concatenated
  [x_t, h], which the baseline computes and drops (7% of W1, 4% of W2).
- On W4 (no loop) XLA counts only the kernel taps inside the image: 0.75x our count, because
  its 4x4 and 2x2 convolutions see on average 6.25 and 4 of their 9 taps, and 1.003x our count
  with `padded=False`.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from benchmarks.workloads import RnnWorkload, VggWorkload

ADAM_FLOPS_PER_PARAM = 12
MOMENTUM_FLOPS_PER_PARAM = 4
# matmuls of one RNN step, as multiples of B*H (gate width, recurrent data gradient width)
_GATES = {"lstm": 4, "gru": 3}


@dataclasses.dataclass(frozen=True)
class StepFlops:
    """FLOPs of one training step: forward, backward and the optimizer's update."""

    forward: int
    backward: int
    update: int

    @property
    def total(self) -> int:
        return self.forward + self.backward + self.update

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "total": self.total}


def matmul(m: int, k: int, n: int) -> int:
    """FLOPs of [m, k] @ [k, n]: a multiply and an add per term."""
    return 2 * m * k * n


def conv3x3(height: int, width: int, c_in: int, c_out: int, padded: bool = True) -> int:
    """FLOPs of one image through a 3x3 SAME stride-1 convolution: all 9 taps at every output
    (the padding's zeros too, as an im2col matmul computes them), or with `padded=False` only
    the taps inside the image (how XLA's cost analysis counts)."""
    if padded:
        return 2 * height * width * c_in * c_out * 9
    return 2 * _taps_inside(height) * _taps_inside(width) * c_in * c_out


def _taps_inside(size: int) -> int:
    # over the `size` outputs along one axis, the taps of a 3-wide SAME window inside the image
    return 3 * size - 2 if size > 1 else 1


def rnn_params(w: RnnWorkload) -> int:
    """Parameters of W1-W3: the cell's kernels and biases, then the Dense layer."""
    n = w.inputs + w.hidden
    cell = n * _GATES[w.cell] * w.hidden + _GATES[w.cell] * w.hidden
    return cell + w.hidden * w.classes + w.classes


def rnn_step_flops(w: RnnWorkload) -> StepFlops:
    """One Adam step of an LSTM or GRU over w.time steps and a Dense layer on the last output."""
    b, n_in, n_h, gates = w.batch, w.inputs, w.hidden, _GATES[w.cell]
    cell_forward = matmul(b, n_in + n_h, gates * n_h)
    # the weight gradient (same size as the forward matmul) and dh through the recurrent part
    cell_backward = matmul(n_in + n_h, b, gates * n_h) + matmul(b, gates * n_h, n_h)
    dense = matmul(b, n_h, w.classes)
    return StepFlops(
        forward=w.time * cell_forward + dense,
        backward=w.time * cell_backward + 2 * dense,
        update=ADAM_FLOPS_PER_PARAM * rnn_params(w),
    )


def _vgg_convs(w: VggWorkload) -> list[tuple[int, int, int]]:
    """(spatial size, c_in, c_out) of each convolution."""
    convs, size, c_in = [], w.image, w.channels
    for layer in w.layers:
        if layer == "M":
            size //= 2
        else:
            convs.append((size, c_in, layer))
            c_in = layer
    return convs


def _vgg_dense(w: VggWorkload) -> list[tuple[int, int]]:
    size = w.image // 2 ** w.layers.count("M")
    c_last = [layer for layer in w.layers if layer != "M"][-1]
    return [(size * size * c_last, w.dense), (w.dense, w.classes)]


def vgg_params(w: VggWorkload) -> int:
    convs = sum(9 * c_in * c_out + c_out for _, c_in, c_out in _vgg_convs(w))
    return convs + sum(n_in * n_out + n_out for n_in, n_out in _vgg_dense(w))


def vgg_step_flops(w: VggWorkload, padded: bool = True) -> StepFlops:
    """One SGD-with-momentum step of W4's VGG-11 (`padded`: see `conv3x3`)."""
    forward = backward = 0
    for k, (size, c_in, c_out) in enumerate(_vgg_convs(w)):
        conv = w.batch * conv3x3(size, size, c_in, c_out, padded)
        forward += conv
        backward += conv if k == 0 else 2 * conv  # no gradient for the images
    for n_in, n_out in _vgg_dense(w):
        forward += matmul(w.batch, n_in, n_out)
        backward += 2 * matmul(w.batch, n_in, n_out)
    return StepFlops(forward, backward, MOMENTUM_FLOPS_PER_PARAM * vgg_params(w))


def step_flops(w: RnnWorkload | VggWorkload) -> StepFlops:
    return rnn_step_flops(w) if isinstance(w, RnnWorkload) else vgg_step_flops(w)


def matmul_rate(n: int = 2048, repeats: int = 7) -> dict:
    """GFLOP/s of one jitted float32 [n, n] @ [n, n] on JAX's default device over `repeats`
    calls after a warm-up call, each ended by block_until_ready: their median and the best.
    The best is what the machine can do; on a machine shared with other work the median is
    the load's (on the loaded 2-core machine it fell to a third of the best, below what W1's
    step reached)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    a, b = (jnp.asarray(rng.normal(size=(n, n)).astype(np.float32)) for _ in range(2))
    product = jax.jit(jnp.matmul)
    product(a, b).block_until_ready()
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        product(a, b).block_until_ready()
        rates.append(matmul(n, n, n) / (time.perf_counter() - start) / 1e9)
    return {
        "n": n,
        "median_gflops": statistics.median(rates),
        "best_gflops": max(rates),
        "repeats": repeats,
    }


def xla_flops(lowered_or_compiled) -> float:
    """XLA's FLOP count of a `jax.jit(f).lower(...)` or its `.compile()`."""
    analysis = lowered_or_compiled.cost_analysis()
    if isinstance(analysis, (list, tuple)):  # older jax: one dict per computation
        analysis = analysis[0]
    return float(analysis["flops"])
