"""`sl.layers`: Keras 3 layers on sluice graphs (see `base` for the life cycle).

Models are `sl.Sequential` and `sl.Model` (package `sluice.models`); losses, metrics and
callbacks are `sl.losses`, `sl.metrics` and `sl.callbacks` (packages of their own).
"""

from sluice.layers import activations, initializers, regularizers
from sluice.layers.base import Layer
from sluice.layers.bidirectional import Bidirectional
from sluice.layers.conv import (
    AveragePooling2D,
    Conv2D,
    GlobalAveragePooling2D,
    GlobalMaxPooling2D,
    MaxPooling2D,
)
from sluice.layers.core import Activation, Dense, Dropout, Flatten, Lambda, Reshape
from sluice.layers.embedding import Embedding
from sluice.layers.input_layer import Input, InputLayer
from sluice.layers.normalization import BatchNormalization
from sluice.layers.recurrent import GRU, LSTM, RNN, SimpleRNN
from sluice.layers.rnn_cells import GRUCell, LSTMCell, SimpleRNNCell
from sluice.layers.serialization import deserialize, serialize

# Keras aliases
AvgPool2D = AveragePooling2D
MaxPool2D = MaxPooling2D
Convolution2D = Conv2D
GlobalAvgPool2D = GlobalAveragePooling2D

__all__ = [
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
    "activations",
    "deserialize",
    "initializers",
    "regularizers",
    "serialize",
]  # fmt: skip
