"""`run_layer_test` over every layer (one row per layer and notable configuration)."""

import importlib
import pathlib

import pytest

from sluice import layers as L
from sluice.testing import run_layer_test

LAYERS = [
    # id, class, init kwargs, input shape, output shape, weights, non-trainable, extra
    ("dense", L.Dense, {"units": 3}, (2, 4), (None, 3), {"kernel": (4, 3), "bias": (3,)}, 0, {}),
    ("dense_rank3_tanh", L.Dense, {"units": 3, "activation": "tanh", "use_bias": False},
     (2, 3, 4), (None, 3, 3), {"kernel": (4, 3)}, 0, {}),
    ("activation", L.Activation, {"activation": "softmax"}, (2, 5), (None, 5), {}, 0, {}),
    ("dropout", L.Dropout, {"rate": 0.5, "seed": 1}, (2, 5), (None, 5), {}, 0,
     {"call_kwargs": {"training": False}}),
    ("flatten", L.Flatten, {}, (2, 3, 2), (None, 6), {}, 0, {}),
    ("reshape", L.Reshape, {"target_shape": (3, -1)}, (2, 6), (None, 3, 2), {}, 0, {}),
    ("embedding", L.Embedding, {"input_dim": 5, "output_dim": 3, "mask_zero": True}, (2, 4),
     (None, 4, 3), {"embeddings": (5, 3)}, 0, {"input_dtype": "int32"}),
    ("conv2d_same", L.Conv2D, {"filters": 2, "kernel_size": 3, "padding": "same"}, (2, 5, 5, 2),
     (None, 5, 5, 2), {"kernel": (3, 3, 2, 2), "bias": (2,)}, 0, {}),
    ("conv2d_strided", L.Conv2D, {"filters": 3, "kernel_size": (2, 3), "strides": 2,
     "activation": "relu"}, (2, 5, 6, 1), (None, 2, 2, 3), {"kernel": (2, 3, 1, 3), "bias": (3,)},
     0, {}),
    ("max_pooling2d", L.MaxPooling2D, {}, (2, 4, 4, 2), (None, 2, 2, 2), {}, 0, {}),
    ("average_pooling2d", L.AveragePooling2D, {"pool_size": 3, "strides": 2, "padding": "same"},
     (2, 5, 5, 2), (None, 3, 3, 2), {}, 0, {}),
    ("global_average_pooling2d", L.GlobalAveragePooling2D, {}, (2, 3, 3, 2), (None, 2), {}, 0, {}),
    ("global_max_pooling2d", L.GlobalMaxPooling2D, {"keepdims": True}, (2, 3, 3, 2),
     (None, 1, 1, 2), {}, 0, {}),
    ("batch_norm_training", L.BatchNormalization, {}, (4, 3), (None, 3),
     {"gamma": (3,), "beta": (3,), "moving_mean": (3,), "moving_variance": (3,)}, 2,
     {"call_kwargs": {"training": True}}),
    ("batch_norm_inference_nhwc", L.BatchNormalization, {"momentum": 0.9}, (2, 2, 2, 3),
     (None, 2, 2, 3), {"gamma": (3,), "beta": (3,), "moving_mean": (3,), "moving_variance": (3,)},
     2, {}),
    ("simple_rnn", L.SimpleRNN, {"units": 3}, (2, 4, 2), (None, 3),
     {"simple_rnn_cell/kernel": (2, 3), "simple_rnn_cell/recurrent_kernel": (3, 3),
      "simple_rnn_cell/bias": (3,)}, 0, {}),
    ("lstm_sequences", L.LSTM, {"units": 3, "return_sequences": True}, (2, 4, 2), (None, 4, 3),
     {"lstm_cell/kernel": (2, 12), "lstm_cell/recurrent_kernel": (3, 12),
      "lstm_cell/bias": (12,)}, 0, {}),
    ("lstm_backwards_state", L.LSTM, {"units": 2, "go_backwards": True, "return_state": True},
     (2, 3, 2), [(None, 2), (None, 2), (None, 2)],
     {"lstm_cell/kernel": (2, 8), "lstm_cell/recurrent_kernel": (2, 8), "lstm_cell/bias": (8,)},
     0, {}),
    ("gru", L.GRU, {"units": 3}, (2, 4, 2), (None, 3),
     {"gru_cell/kernel": (2, 9), "gru_cell/recurrent_kernel": (3, 9), "gru_cell/bias": (2, 9)},
     0, {}),
    ("gru_reset_before", L.GRU, {"units": 2, "reset_after": False, "return_sequences": True},
     (2, 3, 2), (None, 3, 2),
     {"gru_cell/kernel": (2, 6), "gru_cell/recurrent_kernel": (2, 6), "gru_cell/bias": (6,)},
     0, {}),
    ("bidirectional_lstm", L.Bidirectional, {"layer": L.LSTM(2, return_sequences=True)},
     (2, 3, 2), (None, 3, 4),
     {f"{d}_lstm/lstm_cell/{n}": s for d in ("forward", "backward")
      for n, s in (("kernel", (2, 8)), ("recurrent_kernel", (2, 8)), ("bias", (8,)))}, 0, {}),
    ("bidirectional_gru_sum", L.Bidirectional, {"layer": L.GRU(2), "merge_mode": "sum"},
     (2, 3, 2), (None, 2),
     {f"{d}_gru/gru_cell/{n}": s for d in ("forward", "backward")
      for n, s in (("kernel", (2, 6)), ("recurrent_kernel", (2, 6)), ("bias", (2, 6)))}, 0, {}),
    ("masking", L.Masking, {"mask_value": 0.0}, (2, 4, 3), (None, 4, 3), {}, 0, {}),
    ("rescaling", L.Rescaling, {"scale": 0.5, "offset": 1.0}, (2, 4, 3), (None, 4, 3), {}, 0, {}),
]  # fmt: skip


@pytest.mark.parametrize(
    "cls, kwargs, input_shape, output_shape, weights, non_trainable, extra",
    [row[1:] for row in LAYERS],
    ids=[row[0] for row in LAYERS],
)
def test_layer_contract(cls, kwargs, input_shape, output_shape, weights, non_trainable, extra):
    run_layer_test(
        cls, kwargs, input_shape, output_shape, weights, expected_num_non_trainable=non_trainable,
        **extra,
    )  # fmt: skip


# Preprocessing layers take data the contract's random float inputs do not fit (vocabularies,
# adapt, images in [0, 255]): each file checks its layers' values, configs and saving itself.
TESTED_IN_OWN_FILES = {
    "preprocessing/test_feature_layers.py": (
        "CategoryEncoding", "CenterCrop", "Discretization", "IntegerLookup", "Normalization",
        "Resizing",
    ),
    "preprocessing/test_hashing.py": ("Hashing",),
    "preprocessing/test_augmentation_layers.py": (
        "RandomBrightness", "RandomContrast", "RandomCrop", "RandomFlip", "RandomRotation",
        "RandomTranslation", "RandomZoom",
    ),
}  # fmt: skip


def test_every_layer_class_has_a_row():
    # this table, the LAYERS / SINGLE_INPUT / ROWS tables of the other files of tests/layers,
    # the classes a file's inline contract parametrization lists in CONTRACT_CLASSES, and the
    # layers with several inputs (which run_layer_test does not take) in MULTI_INPUT_LAYERS
    here = pathlib.Path(__file__).parent
    others = [
        importlib.import_module(f"tests.layers.{p.stem}")
        for p in here.glob("test_*.py")
        if p.stem != "test_layers"
    ]
    tables = [LAYERS] + [
        getattr(m, name, []) for m in others for name in ("LAYERS", "SINGLE_INPUT", "ROWS")
    ]
    tested = {item for table in tables for row in table for item in row if isinstance(item, type)}
    for m in others:
        tested |= set(getattr(m, "MULTI_INPUT_LAYERS", []))
        tested |= set(getattr(m, "CONTRACT_CLASSES", []))
    for file, names in TESTED_IN_OWN_FILES.items():
        text = (here / file).read_text()
        for name in names:
            assert f"L.{name}" in text or f"layers.{name}" in text, (file, name)
            tested.add(getattr(L, name))
    classes = {
        obj for name, obj in vars(L).items()
        if isinstance(obj, type) and issubclass(obj, L.Layer)
        and obj not in (L.Layer, L.InputLayer, L.RNN, L.Lambda, L.Wrapper)
        and not name.endswith(("Cell", "Cells"))
    }  # fmt: skip
    assert classes - tested == set()
