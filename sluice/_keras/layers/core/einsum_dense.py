"""`EinsumDense`: a dense layer written as an einsum of the inputs and a kernel.

How the equation gives the weights' shapes (Keras 3's rules, `analyze_einsum`). The equation
takes one of three forms, `in,w->out` without an ellipsis, `...in,w->...out` (the batch and any
leading axes elided) or `in...,w->out...` (trailing axes elided). `output_shape` lists the
output's sizes after the batch and the elided axes (for the first and last forms the first
letter of `out` is the batch); None leaves a size to the inputs. Each kernel letter takes its
size from the output when it is an output letter, else from the input; the kernel must be fully
known. A bias covers the output letters from the first letter of `bias_axes` to the end, with
size 1 on the letters it does not name (and on axes elided at the end), so it broadcasts.

    "ab,bc->ac",   output 64,        input (None, 32)     -> kernel (32, 64), output (None, 64)
    "abc,cd->abd", output (None, 64), input (None, 8, 32) -> kernel (32, 64), output (None, 8, 64)
    "...b,bc->...c", bias_axes "c"                        -> bias (64,), any number of lead axes
    "abc,cde->abde", bias_axes "d", output (1, 3, 4)      -> bias (3, 1)
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from sluice._export import export
from sluice._keras import activations, constraints, initializers, regularizers
from sluice._keras.layers.base import Layer
from sluice._keras.layers.input_spec import InputSpec
from sluice.framework.ops.math import einsum_ops

_LETTERS = "[a-zA-Z]"
# (pattern, where the ellipsis is): no ellipsis, leading, trailing (after at least two letters)
_FORMS = (
    (re.compile(f"({_LETTERS}+),({_LETTERS}+)->({_LETTERS}+)"), None),
    (re.compile(rf"\.\.\.({_LETTERS}+),({_LETTERS}+)->\.\.\.({_LETTERS}+)"), "left"),
    (re.compile(rf"({_LETTERS}{{2,}})\.\.\.,({_LETTERS}+)->({_LETTERS}+)\.\.\."), "right"),
)


@dataclasses.dataclass(frozen=True)
class EinsumShapes:
    """What an EinsumDense equation gives for one input shape."""

    kernel_shape: tuple
    bias_shape: tuple | None
    output_shape: tuple  # batch included; None where unknown
    input_axes: list  # the kernel axes contracted with the input (its fan in)
    output_axes: list  # the kernel axes that reach the output (its fan out)


def analyze_einsum(
    equation: str, bias_axes: str | None, input_shape: tuple, output_shape: tuple
) -> EinsumShapes:
    """The kernel, bias and output shapes of an EinsumDense (see the module docstring).

    Raises:
      ValueError: an equation of none of the three forms, an input of another rank, a partial
        output shape of the wrong length or at odds with the input, letters without a source,
        or a kernel or bias size that nothing determines.
    """
    for pattern, ellipsis in _FORMS:
        match = pattern.fullmatch(equation.replace(" ", ""))
        if match:
            break
    else:
        raise ValueError(
            f"Invalid einsum equation '{equation}'. Equations must be in the form "
            "[X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]...."
        )
    in_spec, w_spec, out_spec = match.groups()
    input_shape = tuple(input_shape)
    elided = len(input_shape) - len(in_spec)
    if (
        (ellipsis is None and elided != 0)
        or (ellipsis is not None and elided < 0)
        or (ellipsis == "left" and elided < 1)
    ):
        raise ValueError(
            f"EinsumDense equation '{equation}' does not fit an input of shape {input_shape}: "
            f"'{in_spec}' names {len(in_spec)} axes"
            + ("" if ellipsis is None else " besides the ellipsis")
            + (", and the batch axis must be under the leading ellipsis." if ellipsis == "left"
               else ".")
        )  # fmt: skip
    partial = list(output_shape)
    given = len(out_spec) - (0 if ellipsis == "left" else 1)
    if len(partial) != given:
        raise ValueError(
            f"EinsumDense equation '{equation}': output_shape {tuple(partial)} must give {given} "
            f"sizes (the output '{out_spec}' without the batch"
            + (" and the ellipsis" if ellipsis else "") + ")."
        )  # fmt: skip
    if ellipsis == "left":  # the batch and the other leading axes come from the input
        lead = elided
        full = list(input_shape[:lead]) + partial
        in_index = {c: lead + i for i, c in enumerate(in_spec)}
    else:
        lead = 0
        full = [input_shape[0]] + partial + list(input_shape[len(input_shape) - elided :])
        in_index = {c: i for i, c in enumerate(in_spec)}
    out_index = {c: lead + i for i, c in enumerate(out_spec)}
    for c, i in in_index.items():
        if c in out_index:
            size, wanted = input_shape[i], full[out_index[c]]
            if wanted is not None and size is not None and wanted != size:
                raise ValueError(
                    f"Input shape and output shape do not match at shared dimension '{c}'. "
                    f"Input shape is {size}, and output shape is {wanted}."
                )
            if wanted is None:
                full[out_index[c]] = size
    for c in out_spec:
        if c not in in_spec and c not in w_spec:
            raise ValueError(
                f"Dimension '{c}' was specified in the output '{out_spec}' but has no "
                f"corresponding dim in the input spec '{in_spec}' or weight spec '{w_spec}'."
            )
    kernel_shape, input_axes, output_axes = [], [], []
    for i, c in enumerate(w_spec):
        if c in out_index:
            kernel_shape.append(full[out_index[c]])
            output_axes.append(i)
        elif c in in_index:
            kernel_shape.append(input_shape[in_index[c]])
            input_axes.append(i)
        else:
            raise ValueError(
                f"Weight dimension '{c}' did not have a match in either the input spec "
                f"'{in_spec}' or the output spec '{out_spec}'. For this layer, the weight must "
                "be fully specified."
            )
    if None in kernel_shape:
        raise ValueError(
            f"EinsumDense equation '{equation}': the kernel '{w_spec}' would have shape "
            f"{tuple(kernel_shape)} for input shape {input_shape} and output_shape "
            f"{tuple(output_shape)}; give the unknown sizes in output_shape."
        )
    bias_shape = None
    if bias_axes:
        for c in bias_axes:
            if c not in out_spec:
                raise ValueError(
                    f"Bias dimension '{c}' was requested, but is not part of the output spec "
                    f"'{out_spec}'"
                )
        first = min(out_spec.index(c) for c in bias_axes)
        bias = [full[out_index[c]] if c in bias_axes else 1 for c in out_spec[first:]]
        bias_shape = tuple(bias + ([1] * elided if ellipsis != "left" else []))
        if None in bias_shape:
            raise ValueError(
                f"EinsumDense equation '{equation}': the bias over '{bias_axes}' would have "
                f"shape {bias_shape}; give the unknown sizes in output_shape."
            )
    return EinsumShapes(tuple(kernel_shape), bias_shape, tuple(full), input_axes, output_axes)


@export("layers.EinsumDense")
class EinsumDense(Layer):
    """`activation(einsum(equation, inputs, kernel) + bias)` (Keras 3's `EinsumDense`); the
    shapes of `kernel` and `bias` follow from the equation (see the module docstring).

    Args:
      equation: "[X],[Y]->[Z]", "...[X],[Y]->...[Z]" or "[X]...,[Y]->[Z]..." (letters only).
      output_shape: an int or a tuple, the output's sizes after the batch and the elided axes
        (None for a size the input gives).
      activation: a name or function; None is linear.
      bias_axes: the output letters the bias varies along (None: no bias).
      kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer,
      kernel_constraint, bias_constraint, activity_regularizer: as in Dense. A VarianceScaling
        kernel initializer without `input_axes`/`output_axes` counts the fans over the kernel
        axes the equation contracts with the input and those it passes to the output.
      lora_rank, lora_alpha: accepted for Keras signatures; must be None.

    >>> EinsumDense("abc,cd->abd", output_shape=(None, 64), bias_axes="d")(
    ...     sl.Input((32, 128))).shape
    TensorShape([None, 32, 64])
    """

    def __init__(
        self,
        equation: str,
        output_shape: Any,
        activation: Any = None,
        bias_axes: str | None = None,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        kernel_regularizer: Any = None,
        bias_regularizer: Any = None,
        kernel_constraint: Any = None,
        bias_constraint: Any = None,
        lora_rank: int | None = None,
        lora_alpha: float | None = None,
        gptq_unpacked_column_size: int | None = None,
        quantization_config: Any = None,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        if lora_rank or lora_alpha is not None:
            raise NotImplementedError("EinsumDense: LoRA (lora_rank) is not supported.")
        if gptq_unpacked_column_size or quantization_config is not None:
            raise NotImplementedError("EinsumDense: quantization is not supported.")
        self.equation = equation
        if isinstance(output_shape, int):
            self.partial_output_shape = (output_shape,)
        else:
            self.partial_output_shape = tuple(output_shape)
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def _shapes(self, input_shape: tuple) -> EinsumShapes:
        return analyze_einsum(
            self.equation, self.bias_axes, tuple(input_shape), self.partial_output_shape
        )

    def _kernel_initializer(self, shapes: EinsumShapes) -> Any:
        init = self.kernel_initializer
        if isinstance(init, initializers.VarianceScaling) and (
            init.input_axes is None or init.output_axes is None
        ):
            config = {**init.get_config(), "seed": init.seed}
            config.update(input_axes=shapes.input_axes, output_axes=shapes.output_axes)
            init = type(init).from_config(config)
        return init

    def build(self, input_shape: tuple) -> None:
        shapes = self._shapes(input_shape)
        self.input_spec = InputSpec(ndim=len(input_shape))
        self.kernel = self.add_weight(
            name="kernel", shape=shapes.kernel_shape,
            initializer=self._kernel_initializer(shapes),
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
        )  # fmt: skip
        self.bias = None
        if shapes.bias_shape is not None:
            self.bias = self.add_weight(
                name="bias", shape=shapes.bias_shape, initializer=self.bias_initializer,
                regularizer=self.bias_regularizer, constraint=self.bias_constraint,
            )  # fmt: skip

    def call(self, inputs: Any) -> Any:
        y = einsum_ops.einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return self._shapes(input_shape).output_shape

    def get_config(self) -> dict:
        return {
            **super().get_config(),
            "output_shape": self.partial_output_shape,
            "equation": self.equation,
            "activation": activations.serialize(self.activation),
            "bias_axes": self.bias_axes,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
        }
