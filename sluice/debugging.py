"""`sl.debugging`: checks that stop a run on bad values (TF1 `tf.debugging`).

>>> y = sl.debugging.check_numerics(loss, "loss")  # InvalidArgumentError on NaN or Inf
"""

from sluice.framework.ops.debug_ops import add_check_numerics_ops, check_numerics

__all__ = ["add_check_numerics_ops", "check_numerics"]
