"""`sl.math`: TF1's `tf.math` namespace, the same ops as `sl.*` / `sl.nn.*` under TF's names."""

import sluice as _sl

_FROM_SL = (
    "abs acos acosh add add_n argmax argmin asin asinh atan atan2 atanh ceil conj cos cosh "
    "count_nonzero cumprod cumsum digamma divide equal erf erfc exp expm1 floor floordiv "
    "floormod greater greater_equal is_finite is_inf is_nan less less_equal lgamma log log1p "
    "log_sigmoid logical_and logical_not logical_or logical_xor maximum minimum mod multiply "
    "negative not_equal polygamma pow reciprocal reduce_all reduce_any reduce_logsumexp "
    "reduce_max reduce_mean reduce_min reduce_prod reduce_sum rint round rsqrt scalar_mul "
    "segment_max segment_mean segment_min segment_prod segment_sum sigmoid sign sin sinh sqrt "
    "square squared_difference subtract tan tanh truediv unsorted_segment_max "
    "unsorted_segment_mean unsorted_segment_min unsorted_segment_prod unsorted_segment_sum"
).split()
_FROM_NN = "in_top_k l2_normalize log_softmax softmax softplus softsign top_k".split()

globals().update({name: getattr(_sl, name) for name in _FROM_SL})
globals().update({name: getattr(_sl.nn, name) for name in _FROM_NN})
divide_no_nan = _sl.div_no_nan  # TF 1.15 spells it both ways

__all__ = sorted(_FROM_SL + _FROM_NN + ["divide_no_nan"])
