"""`SpectralNormalization`: a wrapper that divides a layer's kernel by its largest singular
value, estimated by power iteration (Miyato et al., 2018; Keras 3's layer)."""

from __future__ import annotations

from typing import Any

from sluice._export import export
from sluice._keras import initializers
from sluice._keras.layers.core.wrapper import Wrapper
from sluice._keras.layers.input_spec import InputSpec
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ops.array import array_ops, gather_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.math import math_ops, matmul_ops, reduction_ops, unary_ops


def _unit(x: Any) -> Any:
    """`x` over its L2 norm (over every entry), as `keras.utils.normalize(x, axis=None)`; an
    all-zero `x` stays zero."""
    square_sum = reduction_ops.reduce_sum(unary_ops.square(x))
    floor = core_ops.convert_to_tensor(1e-12 * 1e-12, dtype=x.dtype)
    return x * unary_ops.rsqrt(math_ops.maximum(square_sum, floor))


@export("layers.SpectralNormalization")
class SpectralNormalization(Wrapper):
    """Spectral normalization of the `kernel` (or an Embedding's `embeddings`) of `layer`.

    In training, each call first updates the kernel, then runs `layer` with it (Keras 3's
    order); in inference it runs `layer` as it is:

        W = reshape(kernel, [-1, units])            u = vector_u  ([1, units], not trained)
        repeat power_iterations times:  v = unit(u @ W.T);  u = unit(v @ W)
        sigma = v @ W @ u.T                         (u and v taken as constants)
        vector_u <- u;  kernel <- kernel / sigma    (both left as they are when kernel == 0)

    The optimizer then updates the normalized kernel with the gradient at it, as Keras 3 on the
    TensorFlow backend (the writes are ops of the training step, ordered before the update).

    Weights: those of `layer`, plus `vector_u` [1, units] (non-trainable, drawn from a
    truncated normal of stddev 0.02).

    Args:
      layer: a layer with a `kernel` (Dense, Conv2D, ...) or `embeddings` (Embedding).
      power_iterations: the number of power iterations per training call (> 0).

    >>> SpectralNormalization(sl.layers.Dense(10))(np.ones((1, 10, 10, 1))).shape
    (1, 10, 10, 10)
    """

    def __init__(self, layer: Any, power_iterations: int = 1, **kwargs: Any):
        super().__init__(layer, **kwargs)
        if power_iterations <= 0:
            raise ValueError(
                "`power_iterations` should be greater than zero. Received: "
                f"`power_iterations={power_iterations}`"
            )
        self.power_iterations = power_iterations

    def build(self, input_shape: Any) -> None:
        super().build(input_shape)
        self.input_spec = InputSpec(min_ndim=1, axes={-1: input_shape[-1]})
        if getattr(self.layer, "kernel", None) is not None:
            self.kernel = self.layer.kernel
        elif getattr(self.layer, "embeddings", None) is not None:
            self.kernel = self.layer.embeddings
        else:
            raise ValueError(
                f"{type(self.layer).__name__} object has no attribute 'kernel' nor 'embeddings'"
            )
        self.kernel_shape = tuple(self.kernel.shape.as_list())
        self.vector_u = self.add_weight(
            shape=(1, self.kernel_shape[-1]),
            initializer=initializers.TruncatedNormal(stddev=0.02),
            trainable=False,
            name="vector_u",
            dtype=self.kernel.dtype,
        )

    def normalized_weights(self) -> tuple[Any, Any]:
        """The new `vector_u` and the kernel over its estimated spectral norm (see the class
        docstring); both the current ones when the kernel is all zeros."""
        kernel = core_ops.convert_to_tensor(self.kernel)
        weights = array_ops.reshape(kernel, [-1, self.kernel_shape[-1]])
        u = core_ops.convert_to_tensor(self.vector_u)
        v = None
        for _ in range(self.power_iterations):
            v = _unit(matmul_ops.matmul(u, weights, transpose_b=True))
            u = _unit(matmul_ops.matmul(v, weights))
        u, v = core_ops.stop_gradient(u), core_ops.stop_gradient(v)
        sigma = matmul_ops.matmul(matmul_ops.matmul(v, weights), u, transpose_b=True)
        zero = reduction_ops.reduce_all(math_ops.equal(kernel, core_ops.constant(0, kernel.dtype)))
        one = core_ops.constant(1, kernel.dtype)
        sigma = gather_ops.where(zero, one, array_ops.reshape(sigma, []))
        return gather_ops.where(zero, self.vector_u, u), kernel / sigma

    def call(self, inputs: Any, training: bool = False) -> Any:
        if not training:
            return self.layer(inputs)
        new_u, new_kernel = self.normalized_weights()
        writes = [
            self.vector_u.assign(new_u, read_value=False),
            self.kernel.assign(new_kernel, read_value=False),
        ]
        for write in writes:
            self.add_update(write)
        with graph_lib.control_dependencies(writes):  # the layer reads the new kernel
            return self.layer(inputs)

    def compute_output_shape(self, input_shape: Any) -> Any:
        return self.layer.compute_output_shape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "power_iterations": self.power_iterations}
