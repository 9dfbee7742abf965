"""`sl.debugging`: checks that stop a run on bad values (TF1 `tf.debugging`).

>>> loss = sl.placeholder(sl.float32, [])
>>> y = sl.debugging.check_numerics(loss, "loss")  # InvalidArgumentError on NaN or Inf
>>> sl.Session().run(y, {loss: np.inf})
Traceback (most recent call last):
...
sluice.framework.ir.errors.InvalidArgumentError: loss : Tensor had Inf values
     [[node CheckNumerics (op CheckNumerics)]]
"""

from sluice.framework.ops.control.assert_ops import (
    Assert,
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_less,
    assert_less_equal,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_positive,
    assert_rank,
)
from sluice.framework.ops.math.debug_ops import add_check_numerics_ops, check_numerics

__all__ = [
    "Assert",
    "add_check_numerics_ops",
    "assert_equal",
    "assert_greater",
    "assert_greater_equal",
    "assert_less",
    "assert_less_equal",
    "assert_negative",
    "assert_non_negative",
    "assert_non_positive",
    "assert_positive",
    "assert_rank",
    "check_numerics",
]
