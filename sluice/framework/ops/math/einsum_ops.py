"""Tensor contractions: Einsum (`einsum`: NumPy's equation language, `...` included), `tensordot`
(composed as one Einsum) and Cross (`cross`: the cross product of 3-vectors).

An equation with `...` is rewritten, when the graph is built, into one with a letter per
dimension (the input ranks must be known), so the op's equation attr names every axis. Einsum's
gradient for each operand is the einsum of the output gradient with the other operands, as TF's;
axes summed inside one operand only get the gradient broadcast back, and `...` axes an operand
broadcast (size 1) are summed back to that size.

>>> sl.Session().run(sl.einsum("ij,j->i", [[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0])).tolist()
[3.0, 7.0]
"""

from __future__ import annotations

import string
from typing import Any

import jax.numpy as jnp

from sluice._export import export
from sluice.framework.ir.graph import Tensor
from sluice.framework.ir.registry import register_gradient, register_op
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.ops.array import fill_ops
from sluice.framework.ops.core import core_ops
from sluice.framework.ops.core.math_rules import is_numeric
from sluice.framework.ops.core.shape_rules import require_dtype
from sluice.framework.ops.math import reduction_ops

_LETTERS = string.ascii_letters


def _parse(equation: str, ranks: list) -> tuple[list[str], str, str]:
    """(subscripts per input, output subscripts, letters that stand for `...` axes), with every
    `...` replaced by letters; raises ValueError for a malformed equation."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, out = equation.split("->")
        if "->" in out:
            raise ValueError(f"einsum: equation {equation!r} has more than one '->'")
    else:
        lhs, out = equation, None
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(
            f"einsum: equation {equation!r} names {len(terms)} inputs, got {len(ranks)}"
        )
    for term in terms + ([out] if out is not None else []):
        bad = set(term.replace("...", "")) - set(_LETTERS)
        if bad or term.count("...") > 1:
            raise ValueError(f"einsum: invalid subscripts {term!r} in equation {equation!r}")
    spare = [c for c in _LETTERS if c not in equation]
    ellipsis_rank = 0
    explicit = []
    for term, rank in zip(terms, ranks):
        letters = term.replace("...", "")
        if rank is None:
            raise ValueError("einsum needs inputs of known rank")
        if "..." in term:
            ellipsis_rank = max(ellipsis_rank, rank - len(letters))
            if rank < len(letters):
                raise ValueError(
                    f"einsum: subscripts {term!r} name more axes than the rank "
                    f"{rank} of their input"
                )
        elif len(letters) != rank:
            raise ValueError(
                f"einsum: subscripts {term!r} name {len(letters)} axes, but the "
                f"input has rank {rank}"
            )
        explicit.append(letters)
    dots = "".join(spare[:ellipsis_rank])
    inputs = []
    for term, rank in zip(terms, ranks):
        if "..." in term:
            n = rank - len(term.replace("...", ""))
            term = term.replace("...", dots[ellipsis_rank - n :])  # right-aligned, as NumPy
        inputs.append(term)
    if out is None:  # implicit: the letters seen once, sorted, after the `...` axes
        counts = {c: "".join(explicit).count(c) for c in "".join(explicit)}
        out = dots + "".join(sorted(c for c, k in counts.items() if k == 1))
    else:
        if "..." not in out and ellipsis_rank and any("..." in t for t in terms):
            raise ValueError(f"einsum: output subscripts of {equation!r} must include '...'")
        out = out.replace("...", dots)
    for c in out:
        if out.count(c) > 1 or not any(c in t for t in inputs):
            raise ValueError(
                f"einsum: output subscript {c!r} of {equation!r} must appear once "
                "in the output and in some input"
            )
    return inputs, out, dots


def _letter_sizes(inputs: list[str], shapes: list, dots: str) -> dict:
    """The size of each letter; `...` letters may broadcast (size 1), other letters must agree."""
    sizes: dict = {}
    for term, shape in zip(inputs, shapes):
        for c, d in zip(term, shape):
            if d is None:
                continue
            known = sizes.get(c)
            if known is None or known == 1 and c in dots:
                sizes[c] = d
            elif d != known and not (d == 1 and c in dots):
                raise ValueError(
                    f"einsum: axis {c!r} has size {known} in one input and {d} in another"
                )
    return sizes


def _einsum_infer(op) -> list:
    xs = op.inputs
    for x in xs:
        require_dtype(x, "numeric", is_numeric)
        if x.dtype != xs[0].dtype:
            raise TypeError(
                f"einsum: inputs must have one dtype, got {xs[0].dtype.name} and {x.dtype.name}"
            )
    inputs, out = op.get_attr("equation").split("->")[0].split(","), op.get_attr("out")
    sizes = _letter_sizes(inputs, [x.shape.dims for x in xs], op.get_attr("dots"))
    return [(xs[0].dtype, TensorShape([sizes.get(c) for c in out]))]


register_op(
    "Einsum", infer=_einsum_infer, kernel=lambda *xs, equation, **_: jnp.einsum(equation, *xs)
)


@register_gradient("Einsum")
def _einsum_grad(op, grad):
    inputs = op.get_attr("equation").split("->")[0].split(",")
    out, dots = op.get_attr("out"), op.get_attr("dots")
    grads = []
    for i, (x, term) in enumerate(zip(op.inputs, inputs)):
        if len(set(term)) != len(term):
            raise NotImplementedError(
                f"The gradient of Einsum {op.name!r} is not implemented for an input with a "
                f"repeated subscript ({term!r})"
            )
        others = [t for j, t in enumerate(inputs) if j != i]
        tensors = [t for j, t in enumerate(op.inputs) if j != i]
        kept = "".join(c for c in term if c in out or any(c in t for t in others))
        g = _einsum_explicit(f"{','.join([out] + others)}->{kept}", [grad] + tensors, dots)
        g = _sum_broadcast(g, kept, x, term, dots)
        if kept != term:  # axes summed inside this input only: broadcast the gradient back
            g = _einsum_explicit(f"{kept},{term}->{term}", [g, fill_ops.ones_like(x)], dots)
        grads.append(g)
    return grads


def _sum_broadcast(g: Tensor, letters: str, x: Tensor, term: str, dots: str) -> Tensor:
    """`g` summed (keeping the axis) along the `...` axes that `x` broadcast from size 1."""
    dims = dict(zip(term, x.shape.dims if x.shape.rank is not None else [None] * len(term)))
    axes = [
        k for k, c in enumerate(letters) if c in dots and dims.get(c) == 1 and g.shape.dims[k] != 1
    ]
    if any(c in dots and dims.get(c) is None for c in letters):
        raise NotImplementedError("The gradient of einsum needs the sizes of '...' axes")
    return reduction_ops.reduce_sum(g, axes, keepdims=True) if axes else g


def _einsum_explicit(equation: str, tensors: list, dots: str, name: str | None = None) -> Tensor:
    inputs, out = equation.split("->")
    attrs = {"equation": equation, "out": out, "dots": dots}
    return core_ops.apply_op("Einsum", tensors, attrs, name).outputs[0]


@export("einsum", "linalg.einsum")
def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Tensor:
    """A contraction of `inputs` written as an Einstein summation (TF `tf.einsum`, NumPy's
    language): `"ij,jk->ik"` is a matrix product, `"bij->bji"` a transpose, `"...ij,...jk"` a
    batched product; without `->`, the output has the letters seen once, sorted.

    Args:
      equation: the subscripts.
      *inputs: numeric tensors of one dtype and known rank.
      name: (keyword) the op's name.

    Raises:
      ValueError: a malformed equation, subscripts that do not match the ranks, or axes of
        different sizes under one letter.
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"einsum: invalid keyword arguments {sorted(kwargs)}")
    tensors = [core_ops.convert_to_tensor(x) for x in inputs]
    if not tensors:
        raise ValueError("einsum needs at least one input")
    terms, out, dots = _parse(equation, [t.shape.rank for t in tensors])
    return _einsum_explicit(f"{','.join(terms)}->{out}", tensors, dots, name)


@export("tensordot", "linalg.tensordot")
def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """The sum of products of `a` and `b` over the given axes (TF1 `tf.tensordot`): `axes = N`
    pairs the last N axes of `a` with the first N of `b`; `axes = [a_axes, b_axes]` names them.
    The output has a's free axes, then b's.

    Raises:
      ValueError: axes of different sizes or counts, or ranks that are unknown.
    """
    a, b = core_ops.convert_to_tensor(a), core_ops.convert_to_tensor(b)
    ra, rb = a.shape.rank, b.shape.rank
    if ra is None or rb is None:
        raise ValueError("tensordot needs inputs of known rank")
    if isinstance(axes, int) or getattr(axes, "ndim", None) == 0:
        n = int(axes)
        if n < 0 or n > min(ra, rb):
            raise ValueError(f"tensordot: axes must be in [0, {min(ra, rb)}], got {n}")
        a_axes, b_axes = list(range(ra - n, ra)), list(range(n))
    else:
        if len(axes) != 2:
            raise ValueError(f"tensordot: axes must be an int or a pair of lists, got {axes!r}")
        a_axes, b_axes = (
            [axes[0]] if isinstance(axes[0], int) else list(axes[0]),
            [axes[1]] if isinstance(axes[1], int) else list(axes[1]),
        )
        if len(a_axes) != len(b_axes):
            raise ValueError(f"tensordot: different numbers of axes for a and b: {axes!r}")
        a_axes = [k % ra for k in a_axes]
        b_axes = [k % rb for k in b_axes]
    letters = iter(_LETTERS)
    a_terms = [next(letters) for _ in range(ra)]
    b_terms = [next(letters) for _ in range(rb)]
    for i, j in zip(a_axes, b_axes):
        b_terms[j] = a_terms[i]
    out = [c for k, c in enumerate(a_terms) if k not in a_axes] + [
        c for k, c in enumerate(b_terms) if k not in b_axes
    ]
    equation = f"{''.join(a_terms)},{''.join(b_terms)}->{''.join(out)}"
    return _einsum_explicit(equation, [a, b], "", name)


# -- Cross ----------------------------------------------------------------------------------------
def _cross_infer(op) -> list:
    a, b = op.inputs
    require_dtype(a, "numeric", is_numeric)
    if a.dtype != b.dtype:
        raise TypeError(f"cross: inputs must have one dtype, got {a.dtype.name} and {b.dtype.name}")
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"cross: inputs must have the same shape, got {a.shape} and {b.shape}")
    shape = a.shape.merge_with(b.shape)
    if shape.rank == 0 or (shape.rank is not None and shape.dims[-1] not in (None, 3)):
        raise ValueError(f"cross: the last dimension must be 3, got shape {shape}")
    return [(a.dtype, shape)]


register_op("Cross", infer=_cross_infer, kernel=lambda a, b, **_: jnp.cross(a, b))


@register_gradient("Cross")
def _cross_grad(op, grad):
    u, v = op.inputs
    return [cross(v, grad), cross(grad, u)]


@export("cross", "linalg.cross")
def cross(a: Any, b: Any, name: str | None = None) -> Tensor:
    """The cross product of the 3-vectors in the last dimension of `a` and `b` (same shape):
    TF1 `tf.cross`."""
    a, b = core_ops.convert_n([a, b])
    return core_ops.apply_op("Cross", [a, b], name=name).outputs[0]
