"""`sl.layers`: Keras 3 layers on sluice graphs (see `base` for the life cycle).

Models are `sl.Sequential` and `sl.Model` (package `sluice.models`); losses, metrics and
callbacks are `sl.losses`, `sl.metrics` and `sl.callbacks` (packages of their own).
"""

from sluice._keras.layers.activation_layers import LeakyReLU, PReLU, ReLU, Softmax
from sluice._keras.layers.attention import AdditiveAttention, Attention
from sluice._keras.layers.base import Layer
from sluice._keras.layers.bidirectional import Bidirectional
from sluice._keras.layers.conv import (
    AveragePooling2D,
    Conv2D,
    GlobalAveragePooling2D,
    GlobalMaxPooling2D,
    MaxPooling2D,
)
from sluice._keras.layers.convolution import Conv1D, Conv1DTranspose, Conv2DTranspose
from sluice._keras.layers.core import Activation, Dense, Dropout, Flatten, Lambda, Reshape
from sluice._keras.layers.depthwise import DepthwiseConv2D, SeparableConv2D
from sluice._keras.layers.embedding import Embedding
from sluice._keras.layers.input_layer import Input, InputLayer
from sluice._keras.layers.masking import Masking
from sluice._keras.layers.merging import (
    Add,
    Average,
    Concatenate,
    Dot,
    Maximum,
    Minimum,
    Multiply,
    Subtract,
    add,
    average,
    concatenate,
    dot,
    maximum,
    minimum,
    multiply,
    subtract,
)
from sluice._keras.layers.multi_head_attention import MultiHeadAttention
from sluice._keras.layers.noise import GaussianNoise, SpatialDropout1D, SpatialDropout2D
from sluice._keras.layers.normalization import BatchNormalization, LayerNormalization
from sluice._keras.layers.pooling import (
    AveragePooling1D,
    GlobalAveragePooling1D,
    GlobalMaxPooling1D,
    MaxPooling1D,
)
from sluice._keras.layers.recurrent import RNN
from sluice._keras.layers.recurrent_layers import GRU, LSTM, SimpleRNN
from sluice._keras.layers.reshaping import (
    Cropping1D,
    Cropping2D,
    Permute,
    RepeatVector,
    UpSampling1D,
    UpSampling2D,
    ZeroPadding1D,
    ZeroPadding2D,
)
from sluice._keras.layers.rnn_cells import GRUCell, LSTMCell, SimpleRNNCell
from sluice._keras.layers.stacked_rnn_cells import StackedRNNCells
from sluice._keras.layers.time_distributed import TimeDistributed
from sluice._keras.saving.serialization import deserialize, serialize
from sluice._tf1.layers.tf1_conv import (
    average_pooling1d,
    average_pooling2d,
    conv1d,
    conv2d,
    conv2d_transpose,
    max_pooling1d,
    max_pooling2d,
    separable_conv2d,
)
from sluice._tf1.layers.tf1_core import dense, dropout, flatten
from sluice._tf1.layers.tf1_normalization import batch_normalization
from sluice.layers import activations, initializers, regularizers

# Keras aliases
AvgPool2D = AveragePooling2D
MaxPool2D = MaxPooling2D
Convolution2D = Conv2D
GlobalAvgPool2D = GlobalAveragePooling2D
AvgPool1D = AveragePooling1D
MaxPool1D = MaxPooling1D
Convolution1D = Conv1D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalMaxPool1D = GlobalMaxPooling1D
GlobalMaxPool2D = GlobalMaxPooling2D

__all__ = [
    "AdditiveAttention",
    "Attention",
    "MultiHeadAttention",
    "GRU",
    "LSTM",
    "RNN",
    "Activation",
    "AveragePooling2D",
    "AvgPool2D",
    "BatchNormalization",
    "Bidirectional",
    "Conv2D",
    "Convolution2D",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "GRUCell",
    "GlobalAveragePooling2D",
    "GlobalAvgPool2D",
    "GlobalMaxPooling2D",
    "Cropping1D",
    "Cropping2D",
    "GaussianNoise",
    "Permute",
    "RepeatVector",
    "SpatialDropout1D",
    "SpatialDropout2D",
    "TimeDistributed",
    "UpSampling1D",
    "UpSampling2D",
    "ZeroPadding1D",
    "ZeroPadding2D",
    "LeakyReLU",
    "PReLU",
    "ReLU",
    "Softmax",
    "Conv1D",
    "Conv1DTranspose",
    "Conv2DTranspose",
    "DepthwiseConv2D",
    "SeparableConv2D",
    "Add",
    "Average",
    "Concatenate",
    "Dot",
    "Maximum",
    "Minimum",
    "Multiply",
    "Subtract",
    "add",
    "average",
    "concatenate",
    "dot",
    "maximum",
    "minimum",
    "multiply",
    "subtract",
    "LayerNormalization",
    "AveragePooling1D",
    "GlobalAveragePooling1D",
    "GlobalMaxPooling1D",
    "MaxPooling1D",
    "AvgPool1D",
    "MaxPool1D",
    "Convolution1D",
    "GlobalAvgPool1D",
    "GlobalMaxPool1D",
    "GlobalMaxPool2D",
    "Input",
    "InputLayer",
    "LSTMCell",
    "Lambda",
    "Layer",
    "MaxPool2D",
    "MaxPooling2D",
    "Reshape",
    "SimpleRNN",
    "SimpleRNNCell",
    "StackedRNNCells",
    "Masking",
    # TF1's functional layers (tf.layers.dense, ...)
    "average_pooling1d",
    "average_pooling2d",
    "batch_normalization",
    "conv1d",
    "conv2d",
    "conv2d_transpose",
    "dense",
    "dropout",
    "flatten",
    "max_pooling1d",
    "max_pooling2d",
    "separable_conv2d",
    "activations",
    "deserialize",
    "initializers",
    "regularizers",
    "serialize",
]  # fmt: skip
