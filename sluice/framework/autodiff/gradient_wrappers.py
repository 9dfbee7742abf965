"""Gradients built from `custom_gradient`: `grad_pass_through` (the identity as the gradient)
and `recompute_grad` (the backward pass recomputes the forward ops), as TF1's
`custom_gradient` module has them.

Both wrap `f` in `custom_gradient`'s IdentityN, so they work wherever `f` is called (a loop
body, a cond branch) and in both engines; variables `f` reads are found as `custom_gradient`
finds them and passed to the gradient function as `variables`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from sluice._export import export
from sluice.framework.autodiff import custom_gradient as custom_gradient_lib
from sluice.framework.autodiff.gradients import gradients
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import Tensor
from sluice.framework.ops.core.core_ops import identity


def _flatten(structure: Any) -> list:
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _flatten(item)]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in _flatten(structure[key])]
    return [structure]


@export("grad_pass_through", "python.ops.custom_gradient.grad_pass_through")
def grad_pass_through(f: Callable) -> Callable:
    """`f` with the identity as its gradient (TF1's `tf.grad_pass_through`): the gradient of
    `f(x)` goes to `x` unchanged, even through ops with no gradient (an assignment); variables
    `f` reads get none.

    >>> v = sl.Variable(0.0)
    >>> z = sl.constant(3.0)
    >>> y = grad_pass_through(lambda x: sl.assign(v, x))(z * z)
    >>> s = sl.Session(); s.run(sl.global_variables_initializer())
    >>> print(s.run(sl.gradients(y, z)[0]))
    6.0
    """

    @functools.wraps(f)
    def passed_through(*args: Any) -> Any:
        def body(*xs: Any) -> Any:
            def grad(*dys: Any, **kwargs: Any) -> Any:
                variables = kwargs.get("variables")
                if variables:
                    return list(dys), [None] * len(variables)
                return list(dys)

            return f(*xs), grad

        return custom_gradient_lib._build(body, args, warn_unused_variables=False)

    return passed_through


@export("recompute_grad", "python.ops.custom_gradient.recompute_grad")
def recompute_grad(f: Callable) -> Callable:
    """`f` whose gradient recomputes `f`'s forward ops instead of keeping them (TF1's
    `tf.recompute_grad`): the backward pass runs `f` again, after the output gradient is known,
    and differentiates that copy; the values are the same as `f`'s gradient.

    >>> x = sl.constant([1.0, 2.0])
    >>> y = recompute_grad(lambda t: sl.reduce_sum(t * t))(x)
    >>> print(sl.Session().run(sl.gradients(y, x)[0]))
    [2. 4.]
    """

    @functools.wraps(f)
    def recomputed(*args: Any) -> Any:
        def body(*xs: Any) -> Any:
            def grad(*dys: Any, **kwargs: Any) -> Any:
                variables = list(kwargs.get("variables") or [])
                g = graph_lib.get_default_graph()
                with g.control_dependencies([d for d in dys if isinstance(d, Tensor)]):
                    again = f(*[identity(x) for x in xs])
                    outputs = _flatten(again)
                grads = gradients(outputs, list(xs) + variables, grad_ys=list(dys))
                if kwargs.get("variables") is None:
                    return grads[: len(xs)]
                return grads[: len(xs)], grads[len(xs) :]

            return f(*xs), grad

        return custom_gradient_lib._build(body, args, warn_unused_variables=False)

    return recomputed
