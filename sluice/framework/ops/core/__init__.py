"""The base of every family: Const, Placeholder, Identity, StopGradient, NoOp and the op wrappers
(`core_ops`); reusable shape rules (`shape_rules`), int-array helpers (`array_util`) and the
dtype classes and rule factories of the math ops (`math_rules`).
"""

from sluice.framework.ops.core import (  # noqa: F401  (imported for their registrations)
    array_util,
    core_ops,
    math_rules,
    shape_rules,
)
