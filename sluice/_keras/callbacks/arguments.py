"""Arguments several callbacks take and check alike: `monitor` with `mode`, and `save_freq`."""

from __future__ import annotations

from typing import Any


def monitor_mode(mode: str, monitor: str) -> str:
    """ "min" or "max": `mode`, or for "auto" max for accuracies (and AUC, precision, recall)."""
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"mode must be 'auto', 'min' or 'max', got {mode!r}.")
    if mode != "auto":
        return mode
    name = monitor.removeprefix("val_")
    return (
        "max"
        if "acc" in name or name.startswith(("auc", "fmeasure", "precision", "recall"))
        else "min"
    )


def check_save_freq(save_freq: Any) -> Any:
    """`save_freq` itself when it is "epoch" or a positive number of batches."""
    if save_freq != "epoch" and not (isinstance(save_freq, int) and save_freq > 0):
        raise ValueError(f"save_freq must be 'epoch' or a positive int, got {save_freq!r}.")
    return save_freq
