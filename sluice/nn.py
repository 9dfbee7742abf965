"""`sl.nn`: neural-network ops in TensorFlow 1.x spelling (`tf.compat.v1.nn`)."""

from sluice import cells as rnn_cell
from sluice.cells import bidirectional_dynamic_rnn, dynamic_rnn
from sluice.framework.ops.conv_ops import (
    conv2d,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    conv2d_transpose,
)
from sluice.framework.ops.loss_ops import (
    l2_loss,
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from sluice.framework.ops.nn_ops import (
    bias_add,
    dropout,
    elu,
    leaky_relu,
    log_softmax,
    relu,
    relu6,
    selu,
    softmax,
    softplus,
    softsign,
)
from sluice.framework.ops.pool_ops import avg_pool, avg_pool2d, max_pool, max_pool2d
from sluice.framework.ops.unary_ops import sigmoid, tanh

__all__ = [
    "avg_pool",
    "avg_pool2d",
    "bias_add",
    "bidirectional_dynamic_rnn",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "conv2d_transpose",
    "dropout",
    "dynamic_rnn",
    "elu",
    "l2_loss",
    "leaky_relu",
    "log_softmax",
    "max_pool",
    "max_pool2d",
    "relu",
    "relu6",
    "rnn_cell",
    "selu",
    "sigmoid",
    "sigmoid_cross_entropy_with_logits",
    "softmax",
    "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2",
    "softplus",
    "softsign",
    "sparse_softmax_cross_entropy_with_logits",
    "tanh",
]
