"""TF1 functions that only compose ops of several families (no registrations of their own):
clipping, `nn_impl` (moments, batch normalization, ...), rank-generic convolutions, norms and
sampled losses.
"""

from sluice.framework.ops.composite import (  # noqa: F401  (imported for their registrations)
    clip_ops,
    convolution_ops,
    nn_impl_ops,
    norm_ops,
    sampled_loss_ops,
)
