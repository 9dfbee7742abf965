"""Every metric sluice exports, in its documented argument combinations, streamed over two
batches of different sizes and checked against NumPy.

The names are enumerated from `sl.metrics`, `sl.compat.v1.metrics` and `sl.keras.metrics` (when
it exists): a new export fails `test_every_export_is_covered` until it has a row here. Keras 3
metrics (classes, functions, `get`) keep a weighted mean over the samples seen; TF1's
`tf.metrics` return `(value, update_op)` over local variables. One graph, one session.
"""

import itertools
import types

import numpy as np
import pytest

import sluice as sl
from sluice._keras.metrics.metric import Metric

RNG = np.random.default_rng(52)
C = 3
SIZES = (5, 3)  # two batches of different sizes
INTERPRETED = sl.SessionConfig(engine="interpreted")  # hundreds of small ops, run a few times


def exported() -> set:
    modules = [sl.metrics, sl.compat.v1.metrics]
    keras = getattr(sl, "keras", None)
    if keras is not None and hasattr(keras, "metrics"):
        modules.append(keras.metrics)
    names = set()
    for module in modules:
        public = {n for n in dir(module) if not n.startswith("_")}
        names |= {
            n
            for n in public | set(getattr(module, "__all__", ()))
            if not isinstance(getattr(module, n), types.ModuleType)
        }
    return names


def _scores():
    """Probabilities in distinct bins of auc's 200 thresholds (mid-bin), so its trapezoidal
    area is the exact one: no positive and negative share a bin."""
    while True:
        yield from (RNG.permutation(199) + 0.5) / 199


SCORES = _scores()


def batch(kind, n):
    """(y_true, y_pred) of one batch."""
    if kind == "reg":
        return RNG.normal(size=(n, C)).astype(np.float32), RNG.normal(size=(n, C)).astype(
            np.float32
        )
    if kind == "bin":
        y = RNG.integers(0, 2, (n, 1)).astype(np.float32)
        y[:2, 0] = [0.0, 1.0]  # both classes in every batch
        return y, np.array([[next(SCORES)] for _ in range(n)], np.float32)
    if kind == "int":
        return RNG.integers(0, 3, (n, 1)), RNG.integers(0, 3, (n, 1))
    if kind == "flags":
        return RNG.integers(0, 2, (n, C)), RNG.integers(0, 2, (n, C))
    p = RNG.uniform(0, 1, (n, C)).astype(np.float32)
    ids = RNG.integers(0, C, n)
    ids[0] = 2
    if kind == "cat":
        return np.eye(C, dtype=np.float32)[ids], p
    return ids, p  # "sparse"


# -- per-sample references (Keras 3) -------------------------------------------------------------
def batch_more(kind, n):
    """The data kinds beyond `batch`'s."""
    if kind == "pos":
        return RNG.integers(0, 4, (n, C)).astype(np.float32), RNG.uniform(0.1, 3, (n, C)).astype(
            np.float32
        )
    if kind == "dist":
        y, p = RNG.uniform(0.05, 1, (n, C)), RNG.uniform(0.05, 1, (n, C))
        return (y / y.sum(-1, keepdims=True)).astype(np.float32), (
            p / p.sum(-1, keepdims=True)
        ).astype(np.float32)
    if kind == "multi":  # multi-label 0/1 targets, scores in distinct bins
        y = RNG.integers(0, 2, (n, C)).astype(np.float32)
        y[0], y[1] = 0.0, 1.0  # both classes in every column
        return y, np.array([[next(SCORES) for _ in range(C)] for _ in range(n)], np.float32)
    if kind == "seg":  # class ids per pixel, with ids out of range and an ignored class (9)
        y = RNG.integers(0, C, (n, 4))
        y[0, 0], y[0, 1] = 9, -1
        p = RNG.integers(0, C, (n, 4))
        p[1, 0] = 5
        return y, p
    if kind == "onehot_seg":
        y, p = RNG.integers(0, C, n), RNG.uniform(0, 1, (n, C)).astype(np.float32)
        return np.eye(C, dtype=np.float32)[y], p
    return batch(kind, n)


def np_sparse_xent(ids, p, ignore_class=None):
    q = np.clip(p / p.sum(-1, keepdims=True), np.float32(1e-7), np.float32(1 - 1e-7))
    keep = ids != ignore_class
    values = -np.log(np.take_along_axis(q, np.where(keep, ids, 0)[:, None], -1)[:, 0])
    return np.where(keep, values, 0.0), keep


def np_unit(x):
    return x / np.sqrt(np.maximum((x * x).sum(-1, keepdims=True), 1e-14))


def np_in_top_k(ids, p, k):
    picked = np.take_along_axis(p, ids[:, None], -1)
    return ((p > picked).sum(-1) < k).astype(float)


def np_bce(y, p, from_logits=False, label_smoothing=0.0):
    y = y * (1 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        return (np.maximum(p, 0) - p * y + np.log1p(np.exp(-np.abs(p)))).mean(-1)
    q = np.clip(p, np.float32(1e-7), np.float32(1 - 1e-7))
    return -(y * np.log(q) + (1 - y) * np.log(1 - q)).mean(-1)


def np_signed(y):
    return 2 * y - 1 if np.isin(y, [0, 1]).all() else y


# per-sample references of the mean metrics (Keras 3's formulas)
PER_SAMPLE = {
    "accuracy": lambda y, p: (y == p).mean(-1).astype(float),
    "binary_accuracy": lambda y, p, threshold=0.5: (y == (p > threshold)).mean(-1),
    "categorical_accuracy": lambda y, p: (y.argmax(-1) == p.argmax(-1)).astype(float),
    "sparse_categorical_accuracy": lambda y, p: (y == p.argmax(-1)).astype(float),
    "top_k_categorical_accuracy": lambda y, p, k=5: np_in_top_k(y.argmax(-1), p, k),
    "sparse_top_k_categorical_accuracy": lambda y, p, k=5: np_in_top_k(y, p, k),
    "mse": lambda y, p: ((y - p) ** 2).mean(-1),
    "mae": lambda y, p: np.abs(y - p).mean(-1),
    "mape": lambda y, p: 100 * (np.abs(y - p) / np.maximum(np.abs(y), 1e-7)).mean(-1),
    "msle": lambda y, p: (
        (np.log(np.maximum(p, 1e-7) + 1) - np.log(np.maximum(y, 1e-7) + 1)) ** 2
    ).mean(-1),
    "cosine": lambda y, p, axis=-1: (np_unit(y) * np_unit(p)).sum(-1),
    "logcosh": lambda y, p: np.log(np.cosh(p - y)).mean(-1),
    "pearson_correlation": lambda y, p, axis=-1: np.array(
        [np.corrcoef(a, b)[0, 1] for a, b in zip(y, p)]
    ),
    "concordance_correlation": lambda y, p, axis=-1: (
        2
        * ((y - y.mean(-1, keepdims=True)) * (p - p.mean(-1, keepdims=True))).mean(-1)
        / (y.var(-1) + p.var(-1) + (y.mean(-1) - p.mean(-1)) ** 2 + 1e-7)
    ),
    "kld": lambda y, p: (
        np.clip(y, 1e-7, 1) * np.log(np.clip(y, 1e-7, 1) / np.clip(p, 1e-7, 1))
    ).sum(-1),
    "poisson": lambda y, p: (p - y * np.log(p + 1e-7)).mean(-1),
    "bce": np_bce,
    "cce": lambda y, p, from_logits=False, label_smoothing=0.0, axis=-1: (
        -(
            (y * (1 - label_smoothing) + label_smoothing / y.shape[-1])
            * np.log(np.clip(p / p.sum(-1, keepdims=True), np.float32(1e-7), np.float32(1 - 1e-7)))
        ).sum(-1)
    ),
    "scce": lambda y, p, from_logits=False, ignore_class=None, axis=-1: np_sparse_xent(y, p)[0],
    "hinge": lambda y, p: np.maximum(1 - np_signed(y) * p, 0).mean(-1),
    "squared_hinge": lambda y, p: (np.maximum(1 - np_signed(y) * p, 0) ** 2).mean(-1),
    "categorical_hinge": lambda y, p: np.maximum(((1 - y) * p).max(-1) - (y * p).sum(-1) + 1, 0),
}


def mean_of(fn_name):
    """The reference of a mean metric: the weighted mean of the per-sample values."""

    def reference(y, p, w, **kwargs):
        per_sample = PER_SAMPLE[fn_name](y, p, **kwargs)
        w = np.ones(len(per_sample)) if w is None else w
        return (per_sample * w).sum() / w.sum()

    return reference


def np_counts(y, p, w, thresholds, top_k=None, class_id=None, multi_label=False):
    """Keras 3's weighted confusion counts per threshold (tp, fp, tn, fn)."""
    y, p = np.asarray(y, np.float64), np.asarray(p, np.float64)
    if w is None:
        w = np.ones(y.shape)
    elif w.shape != y.shape:
        w = np.broadcast_to(w.reshape(-1, *[1] * (y.ndim - 1)), y.shape)
    if top_k is not None:
        order = np.argsort(-p, axis=-1, kind="stable")[..., :top_k]
        keep = np.zeros_like(p)
        np.put_along_axis(keep, order, 1.0, -1)
        p = np.where(keep == 1, p, -1e10)
    if class_id is not None:
        y, p, w = y[..., class_id], p[..., class_id], w[..., class_id]
    t = np.asarray(thresholds).reshape(-1, *[1] * p.ndim)
    axes = tuple(range(1, p.ndim)) if multi_label else tuple(range(1, p.ndim + 1))
    positive, predicted = y != 0, p > t
    return [
        (w * (label & pred)).sum(axis=axes)
        for label, pred in [
            (positive, predicted),
            (~positive, predicted),
            (~positive, ~predicted),
            (positive, ~predicted),
        ]
    ]


def count_reference(cell):
    def reference(y, p, w, thresholds=None):
        thresholds = [0.5] if thresholds is None else np.atleast_1d(thresholds)
        counts = np_counts(y, p, w, thresholds)[cell]
        return counts[0] if len(counts) == 1 else counts

    return reference


def precision_recall_reference(other):
    def reference(y, p, w, thresholds=None, top_k=None, class_id=None):
        default = [0.5] if top_k is None else [-1e10]
        thresholds = default if thresholds is None else np.atleast_1d(thresholds)
        tp, fp, _, fn = np_counts(y, p, w, thresholds, top_k, class_id)
        total = tp + (fp if other == "fp" else fn)
        value = np.where(total == 0, 0.0, tp / np.where(total == 0, 1.0, total))  # div_no_nan
        return value[0] if len(value) == 1 else value

    return reference


def np_auc(y, p, w, num_thresholds=200, curve="ROC", summation_method="interpolation",
           multi_label=False, from_logits=False, thresholds=None, label_weights=None):  # fmt: skip
    """Keras 3's AUC: its Riemann sum over the confusion counts, in NumPy."""
    if from_logits:
        p = 1 / (1 + np.exp(-p))
    if thresholds is None:
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    else:
        inner = sorted(thresholds)
    t = [-1e-7] + inner + [1 + 1e-7]
    if label_weights is not None and not multi_label:
        w = (np.ones(y.shape) if w is None else w[:, None] * np.ones(y.shape)) * label_weights
    tp, fp, tn, fn = np_counts(y, p, w, t, multi_label=multi_label)
    with np.errstate(divide="ignore", invalid="ignore"):
        div = lambda a, b: np.where(b == 0, 0.0, a / np.where(b == 0, 1, b))  # noqa: E731
        if curve == "PR" and summation_method == "interpolation":
            dtp = tp[:-1] - tp[1:]
            pos = tp + fp
            dp = pos[:-1] - pos[1:]
            slope = div(dtp, np.maximum(dp, 0))
            intercept = tp[1:] - slope * pos[1:]
            ratio = np.where((pos[:-1] > 0) & (pos[1:] > 0), div(pos[:-1], np.maximum(pos[1:], 0)),
                             1.0)  # fmt: skip
            areas = div(slope * (dtp + intercept * np.log(ratio)), np.maximum(tp[1:] + fn[1:], 0))
        else:
            recall = div(tp, tp + fn)
            if curve == "ROC":
                x, yv = div(fp, fp + tn), recall
            elif curve == "PR":
                x, yv = recall, div(tp, tp + fp)
            else:  # PRGAIN, with Keras's fixes where the gains are undefined or negative
                scale = div(tp + fn, tn + fp)
                x = np.where(tp == 0, 0.0, np.maximum(1 - scale * div(fn, tp), 0))
                yv = np.where(tp == 0, 1.0, 1 - scale * div(fp, tp))
            heights = {
                "interpolation": (yv[:-1] + yv[1:]) / 2,
                "minoring": np.minimum(yv[:-1], yv[1:]),
                "majoring": np.maximum(yv[:-1], yv[1:]),
            }[summation_method]
            areas = (x[:-1] - x[1:]) * heights
    if not multi_label:
        return areas.sum()
    by_label = areas.sum(0)
    if label_weights is None:
        return by_label.mean()
    return (by_label * label_weights).sum() / np.sum(label_weights)


def rate_at_rate_reference(bound_name):
    def reference(y, p, w, num_thresholds=200, class_id=None, **bound):
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        t = [0.5] if num_thresholds == 1 else [0.0] + inner + [1.0]
        tp, fp, tn, fn = np_counts(y, p, w, t, class_id=class_id)
        with np.errstate(divide="ignore", invalid="ignore"):
            rates = {
                "sensitivity": np.nan_to_num(tp / (tp + fn)),
                "specificity": np.nan_to_num(tn / (tn + fp)),
                "precision": np.nan_to_num(tp / (tp + fp)),
                "recall": np.nan_to_num(tp / (tp + fn)),
            }
        constrained = rates[bound_name]
        dependent = rates[
            {"specificity": "sensitivity", "sensitivity": "specificity", "recall": "precision",
             "precision": "recall"}[bound_name]
        ]  # fmt: skip
        return np.where(constrained >= bound[bound_name], dependent, 0.0).max()

    return reference


def np_iou(y, p, w, num_classes, target_class_ids=None, ignore_class=None, sparse_y_true=True,
           sparse_y_pred=True, threshold=None):  # fmt: skip
    if threshold is not None:
        p = (p >= threshold).astype(int)
    if not sparse_y_true:
        y = y.argmax(-1)
    if not sparse_y_pred:
        p = p.argmax(-1)
    y, p = y.reshape(-1), p.reshape(-1)
    w = np.ones(y.shape) if w is None else np.broadcast_to(w[:, None], (len(w), y.size // len(w)))
    w = np.asarray(w, np.float64).reshape(-1)
    valid = (y >= 0) & (y < num_classes) & (p >= 0) & (p < num_classes)
    if ignore_class is not None:
        valid &= y != ignore_class
    cm = np.zeros((num_classes, num_classes))
    np.add.at(cm, (y[valid], p[valid]), w[valid])
    tp = np.diag(cm)
    denominator = cm.sum(0) + cm.sum(1) - tp
    ids = list(range(num_classes)) if target_class_ids is None else target_class_ids
    present = denominator[ids] > 1e-9
    iou = np.where(present, tp[ids] / (denominator[ids] + 1e-7), 0.0)
    return iou.sum() / (present.sum() + 1e-7)


def np_r2(y, p, w, class_aggregation="uniform_average", num_regressors=0):
    w = np.ones(y.shape) if w is None else w[:, None] * np.ones(y.shape)
    mean = (y * w).sum(0) / w.sum(0)
    total = ((y - mean) ** 2 * w).sum(0)
    raw = 1 - ((y - p) ** 2 * w).sum(0) / total
    if class_aggregation == "uniform_average":
        score = raw.mean()
    elif class_aggregation == "variance_weighted_average":
        score = (total * raw).sum() / total.sum()
    else:
        score = raw
    n = (w != 0).any(-1).sum()
    if num_regressors and n - 1 > num_regressors:
        score = 1 - (1 - score) * (n - 1) / (n - num_regressors - 1)
    return score


def np_fbeta(y, p, w, average=None, beta=1.0, threshold=None):
    if threshold is None:
        predicted = (p >= p.max(-1, keepdims=True)) & (np.abs(p) > 1e-9)
    else:
        predicted = p > threshold
    predicted = predicted.astype(float)
    w = np.ones((len(y), 1)) if w is None else w[:, None]
    axis = None if average == "micro" else 0
    tp = (predicted * y * w).sum(axis)
    fp = (predicted * (1 - y) * w).sum(axis)
    fn = ((1 - predicted) * y * w).sum(axis)
    support = (y * w).sum(axis)
    precision, recall = tp / (tp + fp + 1e-7), tp / (tp + fn + 1e-7)
    score = (1 + beta**2) * precision * recall / (beta**2 * precision + recall + 1e-7)
    if average == "weighted":
        return (score * support / (support.sum() + 1e-7)).sum()
    return score if average is None else score.mean()


# class name -> (data kind, reference(y, p, w, **kwargs), constructor argument grid)
KERAS = {
    "Accuracy": ("int", mean_of("accuracy"), [{}]),
    "BinaryAccuracy": ("bin", mean_of("binary_accuracy"), [{}, {"threshold": 0.3}]),
    "CategoricalAccuracy": ("cat", mean_of("categorical_accuracy"), [{}]),
    "SparseCategoricalAccuracy": ("sparse", mean_of("sparse_categorical_accuracy"), [{}]),
    "TopKCategoricalAccuracy": ("cat", mean_of("top_k_categorical_accuracy"), [{"k": 1}, {"k": 2}]),
    "SparseTopKCategoricalAccuracy": (
        "sparse",
        mean_of("sparse_top_k_categorical_accuracy"),
        [{"k": 1}, {"k": 2}],
    ),
    "MeanSquaredError": ("reg", mean_of("mse"), [{}]),
    "MeanAbsoluteError": ("reg", mean_of("mae"), [{}]),
    "MeanAbsolutePercentageError": ("reg", mean_of("mape"), [{}]),
    "MeanSquaredLogarithmicError": ("pos", mean_of("msle"), [{}]),
    "RootMeanSquaredError": ("reg", lambda y, p, w: np.sqrt(mean_of("mse")(y, p, w)), [{}]),
    "CosineSimilarity": ("reg", mean_of("cosine"), [{}]),
    "LogCoshError": ("reg", mean_of("logcosh"), [{}]),
    "PearsonCorrelation": ("reg", mean_of("pearson_correlation"), [{}]),
    "ConcordanceCorrelation": ("reg", mean_of("concordance_correlation"), [{}]),
    "KLDivergence": ("dist", mean_of("kld"), [{}]),
    "Poisson": ("pos", mean_of("poisson"), [{}]),
    "BinaryCrossentropy": (
        "multi",
        mean_of("bce"),
        [{}, {"label_smoothing": 0.2}, {"from_logits": True}],
    ),
    "CategoricalCrossentropy": ("cat", mean_of("cce"), [{}, {"label_smoothing": 0.1}]),
    "SparseCategoricalCrossentropy": ("sparse", mean_of("scce"), [{}]),
    "Hinge": ("multi", mean_of("hinge"), [{}]),
    "SquaredHinge": ("multi", mean_of("squared_hinge"), [{}]),
    "CategoricalHinge": ("cat", mean_of("categorical_hinge"), [{}]),
    "Mean": ("reg", None, [{}]),  # update_state(values): the mean of every value
    "Sum": ("reg", None, [{}]),
    "MeanMetricWrapper": (
        "bin",
        mean_of("binary_accuracy"),
        [{"fn": sl.metrics.binary_accuracy, "threshold": 0.7}],
    ),
    "TruePositives": ("multi", count_reference(0), [{}, {"thresholds": [0.2, 0.6]}]),
    "FalsePositives": ("multi", count_reference(1), [{}, {"thresholds": 0.3}]),
    "TrueNegatives": ("multi", count_reference(2), [{}, {"thresholds": [0.0, 1.0]}]),
    "FalseNegatives": ("multi", count_reference(3), [{}, {"thresholds": [0.4, 0.7]}]),
    "Precision": (
        "multi",
        precision_recall_reference("fp"),
        [
            {},
            {"thresholds": [0.3, 0.8]},
            {"top_k": 2},
            {"class_id": 1},
            {"top_k": 1, "class_id": 2},
        ],
    ),
    "Recall": (
        "multi",
        precision_recall_reference("fn"),
        [{}, {"thresholds": 0.7}, {"top_k": 1}, {"class_id": 0, "thresholds": [0.2, 0.5]}],
    ),
    "AUC": (
        "multi",
        np_auc,
        [{}]
        + [
            {"curve": c, "summation_method": m, "num_thresholds": 50}
            for c in ("ROC", "PR", "PRGAIN")
            for m in ("interpolation", "minoring", "majoring")
        ]
        + [
            {"multi_label": True},
            {"multi_label": True, "num_labels": C, "curve": "PR"},
            {"multi_label": True, "label_weights": [0.2, 0.5, 1.0]},
            {"label_weights": [0.2, 0.5, 1.0]},
            {"thresholds": [0.1, 0.5, 0.7]},
            {"from_logits": True, "num_thresholds": 30},
        ],
    ),
    "SensitivityAtSpecificity": (
        "multi",
        rate_at_rate_reference("specificity"),
        [{"specificity": 0.5}, {"specificity": 0.8, "num_thresholds": 7, "class_id": 1}],
    ),
    "SpecificityAtSensitivity": (
        "multi",
        rate_at_rate_reference("sensitivity"),
        [{"sensitivity": 0.6}, {"sensitivity": 0.3, "num_thresholds": 1}],
    ),
    "PrecisionAtRecall": (
        "multi",
        rate_at_rate_reference("recall"),
        [{"recall": 0.5}, {"recall": 0.9, "num_thresholds": 20}],
    ),
    "RecallAtPrecision": (
        "multi",
        rate_at_rate_reference("precision"),
        [{"precision": 0.6}, {"precision": 0.2, "class_id": 2}],
    ),
    "IoU": (
        "seg",
        np_iou,
        [
            {"num_classes": C, "target_class_ids": [0, 2]},
            {"num_classes": C, "target_class_ids": [1], "ignore_class": 9},
        ],
    ),  # fmt: skip
    "MeanIoU": ("seg", np_iou, [{"num_classes": C}, {"num_classes": C, "ignore_class": 0}]),
    "BinaryIoU": (
        "bin",
        np_iou,
        [{"target_class_ids": [0, 1], "threshold": 0.3}, {"target_class_ids": [1]}],
    ),  # fmt: skip
    "OneHotIoU": ("onehot_seg", np_iou, [{"num_classes": C, "target_class_ids": [0, 1]}]),
    "OneHotMeanIoU": ("onehot_seg", np_iou, [{"num_classes": C}]),
    "R2Score": (
        "reg",
        np_r2,
        [
            {},
            {"class_aggregation": None},
            {"class_aggregation": "variance_weighted_average"},
            {"num_regressors": 2},
        ],
    ),
    "FBetaScore": (
        "multi",
        np_fbeta,
        [
            {},
            {"beta": 2.0, "threshold": 0.5},
            {"average": "micro", "threshold": 0.4},
            {"average": "macro"},
            {"average": "weighted", "beta": 0.5, "threshold": 0.6},
        ],
    ),
    "F1Score": ("multi", np_fbeta, [{"threshold": 0.5}, {"average": "macro"}]),
}
FUNCTIONS = {
    "binary_accuracy": "bin",
    "categorical_accuracy": "cat",
    "sparse_categorical_accuracy": "sparse",
    "top_k_categorical_accuracy": "cat",
    "sparse_top_k_categorical_accuracy": "sparse",
    "pearson_correlation": "reg",
    "concordance_correlation": "reg",
}


def reference_kwargs(cls_name, kwargs):
    """What the NumPy reference takes of a class's arguments."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("fn", "num_labels")}
    if cls_name == "BinaryIoU":
        kwargs = {"num_classes": 2, "threshold": 0.5, **kwargs}
    if cls_name.startswith("OneHot"):
        kwargs["sparse_y_true"] = kwargs["sparse_y_pred"] = False
    if cls_name == "F1Score":
        kwargs["beta"] = 1.0
    return kwargs


class CountSamples(Metric):
    """A user's Metric subclass: state from `add_variable`."""

    def build_state(self):
        self.seen = self.add_variable(name="seen")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self._ensure_state([y_pred])
        n = sl.cast(sl.shape(y_pred)[0], sl.float32)
        return self.seen.assign_add(n, read_value=False)

    def result(self):
        return self.seen.value()


def keras_reference(cls_name, ref, kwargs, batches, weights):
    """The result after both batches."""
    y = np.concatenate([b[0] for b in batches]).astype(np.float64)
    p = np.concatenate([b[1] for b in batches]).astype(np.float64)
    if cls_name in ("IoU", "MeanIoU", "OneHotIoU", "OneHotMeanIoU", "BinaryIoU"):
        y = np.concatenate([b[0] for b in batches])
        p = np.concatenate([b[1] for b in batches])
        if cls_name == "BinaryIoU":
            y = y.astype(int)
    w = None if weights[0] is None else np.concatenate(weights).astype(np.float64)
    if cls_name in ("Mean", "Sum"):
        full = np.ones(y.shape) if w is None else w[:, None] * np.ones(y.shape)
        total = (y * full).sum()
        return total if cls_name == "Sum" else total / full.sum()
    if cls_name in ("SparseCategoricalAccuracy", "SparseTopKCategoricalAccuracy",
                    "SparseCategoricalCrossentropy"):  # fmt: skip
        y = y.astype(int)
    return ref(y, p, w, **reference_kwargs(cls_name, kwargs))


def loss_functions(names):
    """The metric functions that are the loss functions of the same name (Keras 3 exports
    `keras.metrics.hinge` as `keras.losses.hinge`), tested with the losses."""
    return {n for n in names if getattr(sl.metrics, n, None) is getattr(sl.losses, n, 0)}


def test_every_export_is_covered():
    names = exported()
    helpers = {"Metric", "get", "serialize", "deserialize"}
    covered = set(KERAS) | set(FUNCTIONS) | set(TF1) | helpers | loss_functions(names)
    missing = sorted(names - covered)
    assert not missing, f"metrics exported without a row in this test's tables: {missing}"


def _stream(cls_name, on_values):
    """(label, metric, expected) for every argument set of a class, the two batches given as
    tensors (`on_values` False: the updates are returned to run) or as arrays."""
    kind, ref, grid = KERAS[cls_name]
    cls = getattr(sl.metrics, cls_name)
    cases, updates = [], [[], []]
    for kwargs, weighted in itertools.product(grid, [False, True]):
        if on_values and kwargs is not grid[0]:
            continue
        batches = [batch_more(kind, n) for n in SIZES]
        weights = [RNG.uniform(0, 2, n).astype(np.float32) if weighted else None for n in SIZES]
        metric = cls(name=f"{cls_name.lower()}_{len(cases)}", **kwargs)
        for i, ((y, p), w) in enumerate(zip(batches, weights)):
            if not on_values:
                y, p = sl.constant(y), sl.constant(p)
                w = None if w is None else sl.constant(w)
            args = (y,) if cls_name in ("Mean", "Sum") else (y, p)
            updates[i].append(metric.update_state(*args, sample_weight=w))
            metric.streamed = getattr(metric, "streamed", []) + [(args, {"sample_weight": w})]
        expected = keras_reference(cls_name, ref, kwargs, batches, weights)
        cases.append((f"{cls_name}({kwargs}, weighted={weighted})", metric, expected))
    return cases, updates


def _check(label, value, expected):
    assert np.shape(value) == np.shape(expected) and np.all(np.isfinite(value)), label
    np.testing.assert_allclose(value, expected, rtol=2e-5, atol=2e-6, err_msg=label)


@pytest.mark.parametrize("cls_name", sorted(KERAS))
def test_keras_metric_streams_two_batches_of_tensors(cls_name):
    with sl.Graph().as_default():
        cases, updates = _stream(cls_name, on_values=False)
        assert all(u is not None for u in updates[0] + updates[1])
        with sl.Session(config=INTERPRETED) as s:
            s.run(sl.global_variables_initializer())
            s.run(updates[0])
            s.run(updates[1])
            got = s.run([m.result() for _, m, _ in cases])
    for (label, _, expected), value in zip(cases, got):
        _check(label, value, expected)


@pytest.mark.parametrize("cls_name", sorted(KERAS))
def test_keras_metric_on_arrays_gives_values_at_once(cls_name):
    """As Keras 3: update_state on arrays runs (returns None), result() is the value, and
    reset_state() starts over."""
    cases, updates = _stream(cls_name, on_values=True)
    assert all(u is None for u in updates[0] + updates[1])
    for label, metric, expected in cases:
        _check(label, metric.result(), expected)
    label, metric, expected = cases[-1]
    metric.reset_state()  # then the same two batches again give the same result
    if cls_name not in ("R2Score", "FBetaScore", "F1Score"):  # 0 / 0 before any update
        assert np.all(np.asarray(metric.result()) == 0), label
    for args, kwargs in metric.streamed:
        assert metric.update_state(*args, **kwargs) is None
    _check(f"{label}, after reset_state", metric.result(), expected)


def test_keras_functions_and_a_user_metric():
    functions = []
    for name, kind in FUNCTIONS.items():
        y, p = batch_more(kind, SIZES[0])
        kwargs = {"k": 2} if "top_k" in name else {}
        expected = PER_SAMPLE[name](y, p, **kwargs)
        if name == "binary_accuracy":  # Keras 3: elementwise
            expected = (y == (p > 0.5)).astype(float)
        functions.append((name, getattr(sl.metrics, name)(y, p, **kwargs), expected))
    y = batch("bin", 4)[0]
    above = sl.metrics.binary_accuracy(y, y * 0.85, threshold=0.8)
    functions.append(("binary_accuracy(threshold=0.8)", above, np.ones((4, 1))))
    ids = np.array([2, 1, 0])
    functions.append(
        (
            "sparse_top_k from_sorted_ids",
            sl.metrics.sparse_top_k_categorical_accuracy(
                ids, np.array([[1, 2, 0], [0, 2, 1], [0, 1, 2]]), k=2, from_sorted_ids=True
            ),
            np.array([1.0, 0.0, 1.0]),
        )
    )
    count = CountSamples()
    updates = [count.update_state(None, sl.zeros([n, 1])) for n in SIZES]
    with sl.Session(config=INTERPRETED) as s:
        s.run(sl.global_variables_initializer())
        s.run(updates)
        assert s.run(count.result()) == sum(SIZES)
        values = s.run([t for _, t, _ in functions])
    for (label, _, expected), value in zip(functions, values):
        np.testing.assert_allclose(value, expected, rtol=1e-6, err_msg=label)


def _normalized(config):
    return {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()}


def test_keras_metrics_config_round_trip_and_get():
    for cls_name, (_, _, grid) in KERAS.items():
        cls = getattr(sl.metrics, cls_name)
        for kwargs in grid:
            metric = cls(name="m", **kwargs)
            config = metric.get_config()
            assert config["name"] == "m" and config["dtype"] == "float32", cls_name
            again = cls.from_config(config)
            assert type(again) is cls and again.get_config() == config, cls_name
            if cls_name != "MeanMetricWrapper":
                saved = sl.metrics.serialize(metric)
                assert saved["module"] == "keras.metrics" and saved["class_name"] == cls_name
                by_config = sl.metrics.deserialize(saved)
                assert type(by_config) is cls, cls_name
                assert _normalized(by_config.get_config()) == _normalized(config), cls_name
    assert CountSamples.from_config(CountSamples(name="c").get_config()).name == "c"


@pytest.mark.parametrize(
    "name, cls",
    [
        ("accuracy", "CategoricalAccuracy"),
        ("acc", "CategoricalAccuracy"),
        ("auc", "AUC"),
        ("AUC", "AUC"),
        ("precision", "Precision"),
        ("recall", "Recall"),
        ("true_positives", "TruePositives"),
        ("top_k_categorical_accuracy", "TopKCategoricalAccuracy"),
        ("sparse_top_k_categorical_accuracy", "SparseTopKCategoricalAccuracy"),
        ("mse", "MeanSquaredError"),
        ("MSE", "MeanSquaredError"),
        ("mean_squared_error", "MeanSquaredError"),
        ("mae", "MeanAbsoluteError"),
        ("mape", "MeanAbsolutePercentageError"),
        ("msle", "MeanSquaredLogarithmicError"),
        ("bce", "BinaryCrossentropy"),
        ("binary_crossentropy", "BinaryCrossentropy"),
        ("categorical_crossentropy", "CategoricalCrossentropy"),
        ("sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"),
        ("binary_accuracy", "BinaryAccuracy"),
        ("root_mean_squared_error", "RootMeanSquaredError"),
        ("kl_divergence", "KLDivergence"),
        ("hinge", "Hinge"),
        ("r2_score", "R2Score"),
        ("f1_score", "F1Score"),
        ("log_cosh_error", "LogCoshError"),
        ("cosine_similarity", "CosineSimilarity"),
    ],
)
def test_get_by_name_as_keras_3_names_the_metric_as_given(name, cls):
    metric = sl.metrics.get(name)
    assert type(metric) is getattr(sl.metrics, cls) and metric.name == name


def test_get_other_identifiers():
    for name in ("log_cosh", "kld", "huber"):  # loss functions: their mean
        metric = sl.metrics.get(name)
        assert type(metric) is sl.metrics.MeanMetricWrapper and metric.name == name
    assert type(sl.metrics.get(sl.metrics.AUC)) is sl.metrics.AUC
    auc = sl.metrics.AUC()
    assert sl.metrics.get(auc) is auc
    wrapped = sl.metrics.get(sl.metrics.mean_squared_error)  # the Keras function of a shared name
    assert wrapped._fn is sl.losses.mse and wrapped.name == "mean_squared_error"
    assert sl.metrics.MeanMetricWrapper(sl.metrics.mean_absolute_error)._fn is sl.losses.mae
    config = {"class_name": "AUC", "config": {"curve": "PR"}}
    assert sl.metrics.get(config).curve == "PR"
    with pytest.raises(ValueError, match="Unknown metric"):
        sl.metrics.get("no_such_metric")
    with pytest.raises(ValueError, match="Could not interpret"):
        sl.metrics.get(3)


@pytest.mark.parametrize(
    "true_shape, pred_shape, picked",
    [
        ([None], [None, 1], "binary_accuracy"),
        ([None, 1], [None, 1], "binary_accuracy"),
        ([None], [None, 3], "sparse_categorical_accuracy"),
        ([None, 1], [None, 3], "sparse_categorical_accuracy"),
        ([None, 5], [None, 5, 3], "sparse_categorical_accuracy"),
        ([None, 3], [None, 3], "categorical_accuracy"),  # also multi-label 0/1 targets
    ],
)
def test_accuracy_is_picked_from_the_shapes_as_keras_3_does(true_shape, pred_shape, picked):
    """Keras 3's compile_utils.get_metric looks at y_true and y_pred only, never the loss: a
    multi-label sigmoid output trained with binary cross-entropy logs categorical accuracy."""
    y_true = sl.placeholder(sl.float32, true_shape)
    y_pred = sl.placeholder(sl.float32, pred_shape)
    for name in ("accuracy", "acc"):
        metric = sl.metrics.get(name, y_true, y_pred)
        assert metric.name == name and metric._fn is getattr(sl.metrics, picked)


def test_a_metric_averages_over_the_ids_a_loss_keeps():
    """sparse_categorical_crossentropy(ignore_class=...) as a metric: the mean over kept ids."""
    ids, p = batch("sparse", 6)
    metric = sl.metrics.MeanMetricWrapper(sl.losses.sparse_categorical_crossentropy, ignore_class=2)
    metric.update_state(ids, p)
    values, keep = np_sparse_xent(ids, p.astype(np.float64), ignore_class=2)
    np.testing.assert_allclose(metric.result(), values.sum() / keep.sum(), rtol=1e-5)


# -- TF1's tf.metrics ---------------------------------------------------------------------------
def np_auc_roc(labels, scores, weights):
    """The exact weighted ROC AUC (pairs ranked right, ties half)."""
    pos, neg = labels.ravel() == 1, labels.ravel() == 0
    s, w = scores.ravel(), np.broadcast_to(weights, labels.shape).ravel()
    pairs = (s[pos][:, None] > s[neg][None, :]) + 0.5 * (s[pos][:, None] == s[neg][None, :])
    ww = w[pos][:, None] * w[neg][None, :]
    return (pairs * ww).sum() / ww.sum()


def _weighted_mean(values, weights):
    w = np.broadcast_to(weights, values.shape)
    return (values * w).sum() / w.sum()


# name -> (data kind, extra argument grid, reference(labels, predictions, weights, **extra))
TF1 = {
    "accuracy": ("int", [{}], lambda y, p, w: _weighted_mean((y == p).astype(float), w)),
    "mean": ("reg", [{}], lambda y, p, w: _weighted_mean(y, w)),
    "mean_absolute_error": ("reg", [{}], lambda y, p, w: _weighted_mean(np.abs(y - p), w)),
    "mean_squared_error": ("reg", [{}], lambda y, p, w: _weighted_mean((y - p) ** 2, w)),
    "root_mean_squared_error": (
        "reg",
        [{}],
        lambda y, p, w: np.sqrt(_weighted_mean((y - p) ** 2, w)),
    ),
    "precision": (
        "flags",
        [{}],
        lambda y, p, w: _weighted_mean(y.astype(float), np.broadcast_to(w, y.shape) * p),
    ),
    "recall": (
        "flags",
        [{}],
        lambda y, p, w: _weighted_mean(p.astype(float), np.broadcast_to(w, y.shape) * y),
    ),
    "auc": (
        "bin",
        [
            {"curve": "ROC", "summation_method": m}
            for m in ("trapezoidal", "careful_interpolation", "minoring", "majoring")
        ]
        + [
            {"curve": "PR", "summation_method": m}
            for m in ("trapezoidal", "careful_interpolation", "minoring", "majoring")
        ],
        lambda y, p, w: np_auc_roc(y, p, w),
    ),
}


@pytest.mark.slow  # ~8 s of CPU; tests/namespaces/test_tf1_metrics.py covers each by default
def test_tf1_metrics_stream_two_batches():
    cases = []
    for name, (kind, grid, ref) in TF1.items():
        fn = getattr(sl.metrics, name)
        for extra, weighting in itertools.product(grid, ["none", "per_example", "full"]):
            if weighting != "none" and (
                kind == "int" and weighting == "full" or extra is not grid[0]
            ):
                continue  # the weights of auc are checked with its first arguments
            batches = [batch(kind, n) for n in SIZES]
            y = np.concatenate([b[0] for b in batches])
            p = np.concatenate([b[1] for b in batches])
            shape = (len(y), 1) if weighting == "per_example" else y.shape
            w = RNG.uniform(0.5, 2, shape).astype(np.float32)
            w.reshape(-1)[2::4] = 0.0
            if weighting == "none":
                w = None
            y_ph = sl.placeholder(sl.as_dtype(y.dtype), [None, *y.shape[1:]])
            p_ph = sl.placeholder(sl.as_dtype(p.dtype), [None, *p.shape[1:]])
            w_ph = None if w is None else sl.placeholder(sl.float32, [None, *w.shape[1:]])
            if name == "mean":
                value, update = fn(y_ph, weights=w_ph)
            else:
                value, update = fn(y_ph, p_ph, weights=w_ph, **extra)
            feeds = []
            start = 0
            for n in SIZES:
                feed = {y_ph: y[start : start + n], p_ph: p[start : start + n]}
                if w is not None:
                    feed[w_ph] = w[start : start + n]
                feeds.append(feed)
                start += n
            expected = ref(y, p, np.ones(1) if w is None else w)
            cases.append(
                (f"{name}({extra}, weights={weighting})", value, update, feeds, extra, expected)
            )
    with sl.Session(config=INTERPRETED) as s:
        s.run(sl.local_variables_initializer())
        firsts = s.run([c[2] for c in cases], {k: v for c in cases for k, v in c[3][0].items()})
        lasts = s.run([c[2] for c in cases], {k: v for c in cases for k, v in c[3][1].items()})
        values = s.run([c[1] for c in cases])
    for (label, _, _, _, extra, expected), first, last, got in zip(cases, firsts, lasts, values):
        assert np.shape(got) == () and np.isfinite(got) and np.isfinite(first), label
        np.testing.assert_allclose(last, got, rtol=1e-6, err_msg=label)
        if extra.get("curve") == "PR" or extra.get("summation_method") in ("minoring", "majoring"):
            assert 0.0 <= got <= 1.0, label  # bounds: their exact values are TF1's
            continue
        np.testing.assert_allclose(
            got,
            expected,
            rtol=2e-3 if "curve" in extra else 1e-5,
            atol=2e-3 if "curve" in extra else 1e-6,
            err_msg=label,
        )
    assert len(sl.get_collection(sl.GraphKeys.METRIC_VARIABLES)) > 0
