"""`sl.nn`: neural-network ops in TensorFlow 1.x spelling (`tf.compat.v1.nn`)."""

from sluice import cells as rnn_cell
from sluice._tf1.cells.dynamic_rnn import dynamic_rnn
from sluice._tf1.cells.raw_rnn import raw_rnn
from sluice._tf1.cells.static_rnn import (
    static_bidirectional_rnn,
    static_rnn,
    static_state_saving_rnn,
)
from sluice._tf1.nn import embedding_lookup, xw_plus_b
from sluice.cells import bidirectional_dynamic_rnn
from sluice.framework.ops.composite.convolution_ops import atrous_conv2d, conv1d, convolution
from sluice.framework.ops.composite.nn_impl_ops import (
    batch_normalization,
    fused_batch_norm,
    l2_normalize,
    log_poisson_loss,
    moments,
    weighted_cross_entropy_with_logits,
    zero_fraction,
)
from sluice.framework.ops.composite.sampled_loss_ops import nce_loss, sampled_softmax_loss
from sluice.framework.ops.math.sort_ops import in_top_k, top_k
from sluice.framework.ops.math.unary_ops import sigmoid, tanh
from sluice.framework.ops.nn.conv_ops import (
    conv2d,
    conv2d_backprop_filter,
    conv2d_backprop_input,
    conv2d_transpose,
)
from sluice.framework.ops.nn.depthwise_conv_ops import (
    depthwise_conv2d,
    depthwise_conv2d_native,
    depthwise_conv2d_native_backprop_filter,
    depthwise_conv2d_native_backprop_input,
    separable_conv2d,
)
from sluice.framework.ops.nn.loss_ops import (
    l2_loss,
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from sluice.framework.ops.nn.lrn_ops import local_response_normalization, lrn
from sluice.framework.ops.nn.nn_ops import (
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
from sluice.framework.ops.nn.pool_ops import avg_pool, avg_pool2d, max_pool, max_pool2d
from sluice.framework.ops.random.candidate_sampling_ops import (
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)

__all__ = [
    "atrous_conv2d",
    "batch_normalization",
    "conv1d",
    "convolution",
    "depthwise_conv2d",
    "depthwise_conv2d_native",
    "depthwise_conv2d_native_backprop_filter",
    "depthwise_conv2d_native_backprop_input",
    "fused_batch_norm",
    "l2_normalize",
    "local_response_normalization",
    "log_poisson_loss",
    "log_uniform_candidate_sampler",
    "lrn",
    "moments",
    "nce_loss",
    "sampled_softmax_loss",
    "separable_conv2d",
    "uniform_candidate_sampler",
    "weighted_cross_entropy_with_logits",
    "zero_fraction",
    "in_top_k",
    "top_k",
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
    "embedding_lookup",
    "l2_loss",
    "leaky_relu",
    "log_softmax",
    "max_pool",
    "max_pool2d",
    "raw_rnn",
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
    "static_bidirectional_rnn",
    "static_rnn",
    "static_state_saving_rnn",
    "tanh",
    "xw_plus_b",
]
