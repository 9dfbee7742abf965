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
def np_sparse_xent(ids, p, ignore_class=None):
    q = np.clip(p / p.sum(-1, keepdims=True), np.float32(1e-7), np.float32(1 - 1e-7))
    keep = ids != ignore_class
    values = -np.log(np.take_along_axis(q, np.where(keep, ids, 0)[:, None], -1)[:, 0])
    return np.where(keep, values, 0.0), keep


PER_SAMPLE = {
    "accuracy": lambda y, p: (y == p).mean(-1).astype(float),
    "binary_accuracy": lambda y, p, threshold=0.5: (y == (p > threshold)).mean(-1),
    "categorical_accuracy": lambda y, p: (y.argmax(-1) == p.argmax(-1)).astype(float),
    "sparse_categorical_accuracy": lambda y, p: (y == p.argmax(-1)).astype(float),
    "mse": lambda y, p: ((y - p) ** 2).mean(-1),
    "mae": lambda y, p: np.abs(y - p).mean(-1),
}

# class name -> (data kind, per-sample reference, constructor argument grid)
KERAS = {
    "Accuracy": ("int", "accuracy", [{}]),
    "BinaryAccuracy": ("bin", "binary_accuracy", [{}, {"threshold": 0.3}]),
    "CategoricalAccuracy": ("cat", "categorical_accuracy", [{}]),
    "SparseCategoricalAccuracy": ("sparse", "sparse_categorical_accuracy", [{}]),
    "MeanSquaredError": ("reg", "mse", [{}]),
    "MeanAbsoluteError": ("reg", "mae", [{}]),
    "RootMeanSquaredError": ("reg", "mse", [{}]),  # sqrt of the mean, below
    "Mean": ("reg", None, [{}]),  # update_state(values): the mean of every value
    "Sum": ("reg", None, [{}]),
    "MeanMetricWrapper": (
        "bin",
        "binary_accuracy",
        [{"fn": sl.metrics.binary_accuracy, "threshold": 0.7}],
    ),
}
FUNCTIONS = {
    "binary_accuracy": "bin",
    "categorical_accuracy": "cat",
    "sparse_categorical_accuracy": "sparse",
}


class CountSamples(Metric):
    """A user's Metric subclass: state from `add_variable`."""

    def build_state(self):
        self.seen = self.add_variable("seen")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self._ensure_state([y_pred])
        n = sl.cast(sl.shape(y_pred)[0], sl.float32)
        return self.seen.assign_add(n, read_value=False)

    def result(self):
        return self.seen.value()


def keras_reference(cls_name, fn_name, kwargs, batches, weights):
    """The result after both batches: a weighted mean (sum) over samples (values)."""
    if cls_name in ("Mean", "Sum"):
        values = np.concatenate([y for y, _ in batches])
        w = (
            np.ones(values.shape)
            if weights[0] is None
            else np.concatenate(weights)[:, None] * np.ones(values.shape)
        )
        total = (values * w).sum()
        return total if cls_name == "Sum" else total / w.sum()
    kw = {k: v for k, v in kwargs.items() if k != "fn"}
    per_sample = np.concatenate([PER_SAMPLE[fn_name](y, p, **kw) for y, p in batches])
    w = np.ones(len(per_sample)) if weights[0] is None else np.concatenate(weights)
    mean = (per_sample * w).sum() / w.sum()
    return np.sqrt(mean) if cls_name == "RootMeanSquaredError" else mean


def loss_functions(names):
    """The metric functions that are the loss functions of the same name (Keras 3 exports
    `keras.metrics.hinge` as `keras.losses.hinge`), tested with the losses."""
    return {n for n in names if getattr(sl.metrics, n, None) is getattr(sl.losses, n, 0)}


def test_every_export_is_covered():
    names = exported()
    covered = set(KERAS) | set(FUNCTIONS) | set(TF1) | {"Metric", "get"} | loss_functions(names)
    missing = sorted(names - covered)
    assert not missing, f"metrics exported without a row in this test's tables: {missing}"


def test_keras_metrics_stream_two_batches():
    cases, updates, functions = [], [[], []], []
    for cls_name, (kind, fn_name, grid) in KERAS.items():
        cls = getattr(sl.metrics, cls_name)
        for kwargs, weighted in itertools.product(grid, [False, True]):
            batches = [batch(kind, n) for n in SIZES]
            weights = [RNG.uniform(0, 2, n).astype(np.float32) if weighted else None for n in SIZES]
            metric = cls(name=f"{cls_name.lower()}_{len(cases)}", **kwargs)
            for i, ((y, p), w) in enumerate(zip(batches, weights)):
                if cls_name in ("Mean", "Sum"):
                    updates[i].append(metric.update_state(y, sample_weight=w))
                else:
                    updates[i].append(metric.update_state(y, p, sample_weight=w))
            expected = keras_reference(cls_name, fn_name, kwargs, batches, weights)
            cases.append((f"{cls_name}({kwargs}, weighted={weighted})", metric, expected))
    for name, kind in FUNCTIONS.items():
        y, p = batch(kind, SIZES[0])
        functions.append((name, getattr(sl.metrics, name)(y, p), PER_SAMPLE[name](y, p)))
    functions.append(
        (
            "binary_accuracy(threshold=0.8)",
            sl.metrics.binary_accuracy(y := batch("bin", 4)[0], p := y * 0.85),
            np.ones(4),
        )
    )
    count = CountSamples()
    updates[0].append(count.update_state(None, np.zeros((SIZES[0], 1), np.float32)))
    updates[1].append(count.update_state(None, np.zeros((SIZES[1], 1), np.float32)))
    with sl.Session(config=INTERPRETED) as s:
        s.run(sl.global_variables_initializer())
        s.run(updates[0])
        s.run(updates[1])
        got = s.run([m.result() for _, m, _ in cases] + [count.result()])
        values = s.run([t for _, t, _ in functions])
    assert got[-1] == sum(SIZES)
    for (label, _, expected), value in zip(cases, got):
        assert np.shape(value) == () and np.isfinite(value), label
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6, err_msg=label)
    for (label, _, expected), value in zip(functions, values):
        np.testing.assert_allclose(value, expected, rtol=1e-6, err_msg=label)


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
                by_config = sl.metrics.get({"class_name": cls_name, "config": config})
                assert type(by_config) is cls and by_config.get_config() == config
                assert type(sl.metrics.get(cls_name)) is cls
    assert CountSamples.from_config(CountSamples(name="c").get_config()).name == "c"
    for name in (
        "accuracy",
        "acc",
        "mse",
        "mae",
        "binary_accuracy",
        "categorical_accuracy",
        "sparse_categorical_accuracy",
        "binary_crossentropy",
        "categorical_crossentropy",
        "sparse_categorical_crossentropy",
    ):
        assert isinstance(sl.metrics.get(name), Metric), name
    assert isinstance(sl.metrics.get(sl.metrics.binary_accuracy), Metric)
    with pytest.raises(ValueError, match="Unknown metric"):
        sl.metrics.get("no_such_metric")


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
    update = metric.update_state(ids, p)
    values, keep = np_sparse_xent(ids, p.astype(np.float64), ignore_class=2)
    with sl.Session(config=INTERPRETED) as s:
        s.run(sl.global_variables_initializer())
        s.run(update)
        np.testing.assert_allclose(s.run(metric.result()), values.sum() / keep.sum(), rtol=1e-5)


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
