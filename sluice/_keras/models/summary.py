"""`Model.summary()`: one row per layer (name, class, output shape, parameters), then totals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sluice._keras.layers import base, tracking
from sluice._tf1.cells import nest


def _output_shape(layer: base.Layer) -> str:
    if not layer.call_nodes:
        return "?"
    shapes = [
        tracking.shape_tuple(t)
        for t in nest.flatten(layer.call_nodes[0].outputs)
        if hasattr(t, "shape")
    ]
    text = [str(s) for s in shapes]
    return text[0] if len(text) == 1 else "[" + ", ".join(text) + "]"


def _count(variables: list) -> int:
    return int(sum(np.prod(v.shape.as_list(), dtype=np.int64) for v in variables))


def print_summary(
    model: Any, line_length: int = 80, print_fn: Callable[[str], Any] = print
) -> None:
    """Prints the summary of `model` through `print_fn`."""
    columns = [
        int(line_length * 0.45),
        int(line_length * 0.33),
        line_length - int(line_length * 0.45) - int(line_length * 0.33),
    ]

    def row(fields: list[str]) -> str:
        line = ""
        for field, width in zip(fields, columns[:-1]):
            line += field[: width - 1].ljust(width)
        return line + fields[-1].rjust(columns[-1])

    print_fn(f'Model: "{model.name}"')
    print_fn("━" * line_length)
    print_fn(row(["Layer (type)", "Output Shape", "Param #"]))
    print_fn("━" * line_length)
    layers = model.layers
    for i, layer in enumerate(layers):
        params = f"{_count(layer.weights):,}" if layer.built else "0 (unbuilt)"  # Keras 3's
        print_fn(row([f"{layer.name} ({type(layer).__name__})", _output_shape(layer), params]))
        print_fn(("─" if i < len(layers) - 1 else "━") * line_length)
    trainable = _count(model.trainable_weights)
    total = _count(model.weights)
    print_fn(f" Total params: {total:,}")
    print_fn(f" Trainable params: {trainable:,}")
    print_fn(f" Non-trainable params: {total - trainable:,}")
