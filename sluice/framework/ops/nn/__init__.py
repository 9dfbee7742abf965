"""Neural-network ops: activations, softmax, BiasAdd, dropout, losses (CTC too), convolutions
(with their window helpers and CPU kernels), pooling, LRN, image resizing and sequence ops.
"""

from sluice.framework.ops.nn import (  # noqa: F401  (imported for their registrations)
    conv_ops,
    cpu_kernels,
    ctc_ops,
    depthwise_conv_ops,
    image_ops,
    image_transform_ops,
    loss_ops,
    lrn_ops,
    nn_ops,
    pool_ops,
    sequence_ops,
    window_util,
)
