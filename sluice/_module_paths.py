"""The module path a saved file names for a class or function sluice defines.

Issue 26 moved the implementation into sluice/_keras and sluice/_tf1 without changing the
public names; files written before (a `.keras` config's "module" of a class with no Keras
public path, an ApplyUpdates op's optimizer class in a graph_def) name the modules as they were,
`sluice.layers.core` for what is now `sluice._keras.layers.core`. The regrouping of the layers by
family (item 3) moved their modules again: `MOVED` names the module each new one was part of.
Writers go through `saved_module`, so files do not change and files written before still load.

>>> saved_module("sluice._keras.layers.core.dense")
'sluice.layers.core'
>>> saved_module("sluice._keras.layers.rnn.rnn")
'sluice.layers.recurrent'
>>> saved_module("my_project.layers")
'my_project.layers'
"""

_PRIVATE_PREFIXES = ("sluice._keras.", "sluice._tf1.")

# module now -> the module its classes and functions were saved under before the layers were
# grouped by family (issue 26, item 3)
MOVED = {
    "sluice._keras.activations": "sluice.layers.activations",
    "sluice._keras.initializers": "sluice.layers.initializers",
    "sluice._keras.layers.activations.activation": "sluice.layers.core",
    "sluice._keras.layers.activations.leaky_relu": "sluice.layers.activation_layers",
    "sluice._keras.layers.activations.prelu": "sluice.layers.activation_layers",
    "sluice._keras.layers.activations.relu": "sluice.layers.activation_layers",
    "sluice._keras.layers.activations.softmax": "sluice.layers.activation_layers",
    "sluice._keras.layers.arguments": "sluice.layers.core",
    "sluice._keras.layers.attention.additive_attention": "sluice.layers.attention",
    "sluice._keras.layers.attention.attention": "sluice.layers.attention",
    "sluice._keras.layers.attention.multi_head_attention": "sluice.layers.multi_head_attention",
    "sluice._keras.layers.convolutional.base_conv": "sluice.layers.convolution",
    "sluice._keras.layers.convolutional.base_conv_transpose": "sluice.layers.convolution",
    "sluice._keras.layers.convolutional.base_depthwise_conv": "sluice.layers.depthwise",
    "sluice._keras.layers.convolutional.conv1d": "sluice.layers.convolution",
    "sluice._keras.layers.convolutional.conv1d_transpose": "sluice.layers.convolution",
    "sluice._keras.layers.convolutional.conv2d": "sluice.layers.conv",
    "sluice._keras.layers.convolutional.conv2d_transpose": "sluice.layers.convolution",
    "sluice._keras.layers.convolutional.depthwise_conv2d": "sluice.layers.depthwise",
    "sluice._keras.layers.convolutional.separable_conv2d": "sluice.layers.depthwise",
    "sluice._keras.layers.core.dense": "sluice.layers.core",
    "sluice._keras.layers.core.embedding": "sluice.layers.embedding",
    "sluice._keras.layers.core.input_layer": "sluice.layers.input_layer",
    "sluice._keras.layers.core.lambda_layer": "sluice.layers.core",
    "sluice._keras.layers.core.masking": "sluice.layers.masking",
    "sluice._keras.layers.merging.add": "sluice.layers.merging",
    "sluice._keras.layers.merging.average": "sluice.layers.merging",
    "sluice._keras.layers.merging.base_merge": "sluice.layers.merging",
    "sluice._keras.layers.merging.concatenate": "sluice.layers.merging",
    "sluice._keras.layers.merging.dot": "sluice.layers.merging",
    "sluice._keras.layers.merging.maximum": "sluice.layers.merging",
    "sluice._keras.layers.merging.minimum": "sluice.layers.merging",
    "sluice._keras.layers.merging.multiply": "sluice.layers.merging",
    "sluice._keras.layers.merging.subtract": "sluice.layers.merging",
    "sluice._keras.layers.normalization.batch_normalization": "sluice.layers.normalization",
    "sluice._keras.layers.normalization.layer_normalization": "sluice.layers.normalization",
    "sluice._keras.layers.normalization.normalize": "sluice.layers.normalization",
    "sluice._keras.layers.pooling.global_pooling1d": "sluice.layers.pooling",
    "sluice._keras.layers.pooling.pooling1d": "sluice.layers.pooling",
    "sluice._keras.layers.pooling.pooling2d": "sluice.layers.conv",
    "sluice._keras.layers.regularization.dropout": "sluice.layers.core",
    "sluice._keras.layers.regularization.gaussian_noise": "sluice.layers.noise",
    "sluice._keras.layers.regularization.spatial_dropout": "sluice.layers.noise",
    "sluice._keras.layers.reshaping.cropping": "sluice.layers.reshaping",
    "sluice._keras.layers.reshaping.flatten": "sluice.layers.core",
    "sluice._keras.layers.reshaping.permute": "sluice.layers.reshaping",
    "sluice._keras.layers.reshaping.repeat_vector": "sluice.layers.reshaping",
    "sluice._keras.layers.reshaping.reshape": "sluice.layers.core",
    "sluice._keras.layers.reshaping.reshaping_utils": "sluice.layers.reshaping",
    "sluice._keras.layers.reshaping.up_sampling": "sluice.layers.reshaping",
    "sluice._keras.layers.reshaping.zero_padding": "sluice.layers.reshaping",
    "sluice._keras.layers.rnn.bidirectional": "sluice.layers.bidirectional",
    "sluice._keras.layers.rnn.recurrent_layers": "sluice.layers.recurrent_layers",
    "sluice._keras.layers.rnn.rnn": "sluice.layers.recurrent",
    "sluice._keras.layers.rnn.rnn_cells": "sluice.layers.rnn_cells",
    "sluice._keras.layers.rnn.rnn_loop": "sluice.layers.rnn_loop",
    "sluice._keras.layers.rnn.rnn_states": "sluice.layers.rnn_states",
    "sluice._keras.layers.rnn.stacked_rnn_cells": "sluice.layers.stacked_rnn_cells",
    "sluice._keras.layers.rnn.time_distributed": "sluice.layers.time_distributed",
    "sluice._keras.regularizers": "sluice.layers.regularizers",
    "sluice._tf1.layers.tf1_pooling": "sluice.layers.tf1_conv",
}


def saved_module(module: str) -> str:
    """`module` as files name it: without the `_keras`/`_tf1` of sluice's implementation, and
    as it was named before the layers were grouped by family."""
    if module in MOVED:
        return MOVED[module]
    for prefix in _PRIVATE_PREFIXES:
        if module.startswith(prefix):
            return "sluice." + module[len(prefix) :]
    return module
