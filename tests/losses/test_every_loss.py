"""Every loss sluice exports, in every documented argument combination, against NumPy.

The names are enumerated from the public namespaces (`sl.losses`, `sl.compat.v1.losses` and
`sl.keras.losses` when it exists), so a new export fails `test_every_export_is_covered` until it
has a row here. The Keras 3 losses (classes and functions) are checked against Keras 3's formulas
(`keras/src/losses/losses.py`, `loss.py`: clipping to [eps, 1 - eps], label smoothing, axis,
reductions, the `ignore_class` mask); TF1's `tf.losses` against TF1's `compute_weighted_loss`
table. All cases are built in one graph and run in one session.
"""

import itertools
import types

import numpy as np
import pytest

import sluice as sl
from sluice._keras.losses.loss import Loss

RNG = np.random.default_rng(25)
EPS = 1e-7
N, C = 4, 3
REDUCTIONS = ["sum_over_batch_size", "sum", "none", None, "mean", "mean_with_sample_weight"]
# Thousands of small ops run once: interpreting them is 4x faster than compiling one program.
INTERPRETED = sl.SessionConfig(engine="interpreted")


def namespaces() -> list:
    found = [sl.losses, sl.compat.v1.losses]
    keras = getattr(sl, "keras", None)
    if keras is not None and hasattr(keras, "losses"):
        found.append(keras.losses)
    return found


def exported() -> set:
    names = set()
    for module in namespaces():
        public = {n for n in dir(module) if not n.startswith("_")}
        names |= {
            n
            for n in public | set(getattr(module, "__all__", ()))
            if not isinstance(getattr(module, n), types.ModuleType)
        }
    return names


# -- NumPy references (Keras 3) -------------------------------------------------------------------
def np_clip(p):
    """Clipped as in float32 (1 - 1e-7 rounds to 1 - 2**-23)."""
    return np.clip(p, np.float32(EPS), np.float32(1 - EPS)).astype(np.float64)


def np_log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


def np_bce(y, p, from_logits=False, label_smoothing=0.0, axis=-1):
    if label_smoothing:
        y = y * (1 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        values = -y * np_log_sigmoid(p) - (1 - y) * np_log_sigmoid(-p)
    else:
        p = np_clip(p)
        values = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    return values.mean(axis=axis)


def np_log_probabilities(p, from_logits, axis):
    if from_logits:
        return p - np.log(np.exp(p).sum(axis, keepdims=True))
    return np.log(np_clip(p / p.sum(axis, keepdims=True)))


def np_cce(y, p, from_logits=False, label_smoothing=0.0, axis=-1):
    if label_smoothing:
        y = y * (1 - label_smoothing) + label_smoothing / y.shape[axis]
    return -(y * np_log_probabilities(p, from_logits, axis)).sum(axis)


def np_scce(ids, p, from_logits=False, ignore_class=None, axis=-1):
    """(losses, mask or None): Keras 3 masks the ignored ids."""
    keep = np.ones(ids.shape, bool) if ignore_class is None else ids != ignore_class
    safe = np.where(keep, ids, 0)
    log_p = np.moveaxis(np_log_probabilities(p, from_logits, axis), axis, -1)
    values = -np.take_along_axis(log_p, safe[..., None], -1)[..., 0]
    return np.where(keep, values, 0.0), (None if ignore_class is None else keep)


def np_mse(y, p):
    return ((y - p) ** 2).mean(-1)


def np_mae(y, p):
    return np.abs(y - p).mean(-1)


def np_mape(y, p):
    return 100 * (np.abs(y - p) / np.maximum(np.abs(y), EPS)).mean(-1)


def np_msle(y, p):
    return ((np.log(np.maximum(p, EPS) + 1) - np.log(np.maximum(y, EPS) + 1)) ** 2).mean(-1)


def np_cosine(y, p, axis=-1):
    def unit(x):
        return x / np.sqrt(np.maximum((x * x).sum(axis, keepdims=True), EPS**2))

    return -(unit(y) * unit(p)).sum(axis)


def np_huber(y, p, delta=1.0):
    e = np.abs(y - p)
    return np.where(e <= delta, 0.5 * e**2, delta * e - 0.5 * delta**2).mean(-1)


def np_log_cosh(y, p):
    return np.log(np.cosh(p - y)).mean(-1)


def np_signed(y):
    return 2 * y - 1 if np.isin(y, [0, 1]).all() else y


def np_hinge(y, p):
    return np.maximum(1 - np_signed(y) * p, 0).mean(-1)


def np_squared_hinge(y, p):
    return (np.maximum(1 - np_signed(y) * p, 0) ** 2).mean(-1)


def np_categorical_hinge(y, p):
    return np.maximum((p * (1 - y)).max(-1) - (y * p).sum(-1) + 1, 0)


def np_kld(y, p):
    y, p = np.clip(y, EPS, 1), np.clip(p, EPS, 1)
    return (y * np.log(y / p)).sum(-1)


def np_poisson(y, p):
    return (p - y * np.log(p + EPS)).mean(-1)


def np_bfce(y, p, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
            label_smoothing=0.0, axis=-1):  # fmt: skip
    if label_smoothing:
        y = y * (1 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        p = 1 / (1 + np.exp(-p))
    q = np_clip(p)
    bce = -(y * np.log(q) + (1 - y) * np.log(1 - q))
    p_t = y * p + (1 - y) * (1 - p)
    focal = (1 - p_t) ** gamma * bce
    if apply_class_balancing:
        focal = (y * alpha + (1 - y) * (1 - alpha)) * focal
    return focal.mean(axis)


def np_cfce(y, p, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1):
    if label_smoothing:
        y = y * (1 - label_smoothing) + label_smoothing / p.shape[axis]
    if from_logits:
        p = np.exp(p - p.max(axis, keepdims=True))
    q = np_clip(p / p.sum(axis, keepdims=True))
    return (alpha * (1 - q) ** gamma * -y * np.log(q)).sum(axis)


def np_gce(ids, p, q):
    picked = np.take_along_axis(p, ids[..., None], -1)[..., 0]
    return (1 - picked**q) / q


def np_ctc(labels, logits):
    """-log of the sum, over every alignment of the time steps that collapses to the labels
    (repeats merged, blanks (0) dropped), of its probability: by enumeration."""
    log_p = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    losses = []
    for row, lp in zip(labels.astype(int), log_p):
        target = [c for c in row if c != 0]
        total = 0.0
        for path in itertools.product(range(lp.shape[1]), repeat=lp.shape[0]):
            merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
            if [c for c in merged if c != 0] == target:
                total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
        losses.append(-np.log(total))
    return np.array(losses)


def ctc_data():
    """Labels of lengths 0 to 2 (zero-padded) and logits for 4 steps of 3 classes."""
    labels = np.array([[1, 2], [2, 2], [1, 0], [0, 0]], np.int32)
    return labels, RNG.normal(size=(N, 4, C)).astype(np.float32)


def _sum(x, axis):
    return x.sum(axis=None if axis is None else tuple(axis))


def np_dice(y, p, axis=None):
    return 1 - 2 * _sum(y * p, axis) / (_sum(y, axis) + _sum(p, axis) + EPS)


def np_tversky(y, p, alpha=0.5, beta=0.5, axis=None):
    tp, fp, fn = _sum(y * p, axis), _sum((1 - y) * p, axis), _sum(y * (1 - p), axis)
    return 1 - tp / (tp + alpha * fp + beta * fn + EPS)


def expand_to(w, values):
    while w.ndim < values.ndim:
        w = w[..., None]
    return w


def np_reduce(values, sample_weight, mask, reduction):
    """Keras 3's `reduce_weighted_values`."""
    if mask is not None:
        m = mask.astype(np.float64)
        if reduction in ("mean", "sum_over_batch_size"):
            m = m * m.size / m.sum()
        sample_weight = m if sample_weight is None else expand_to(sample_weight, m) * m
    if sample_weight is not None:
        values = values * expand_to(sample_weight, values)
    if reduction in (None, "none"):
        return values
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        return values.sum() / sample_weight.sum() if sample_weight.sum() else 0.0
    return values.sum() if reduction == "sum" else values.sum() / values.size


# -- data -----------------------------------------------------------------------------------------
def probabilities(shape, axis=-1):
    p = RNG.uniform(0.05, 1.0, size=shape)
    return p / p.sum(axis, keepdims=True)


def binary_data(rank3, from_logits):
    shape = (N, C, C) if rank3 else (N, C)
    y = RNG.integers(0, 2, size=shape).astype(np.float32)
    p = RNG.normal(size=shape) * 3 if from_logits else RNG.uniform(0, 1, size=shape)
    if not from_logits:  # exact 0 and 1 exercise the clipping
        p.reshape(-1)[:2] = [0.0, 1.0]
    return y, p.astype(np.float32)


def categorical_data(from_logits, axis, sparse, ignore_class=None):
    """(targets, predictions) of shape (N, C, C), classes on `axis`: one-hot targets, or class
    ids holding the ignored class (2, or -1, an id only valid as the ignored one)."""
    shape = (N, C, C)
    p = RNG.normal(size=shape) * 2 if from_logits else probabilities(shape, axis) * 1.5
    ids = RNG.integers(0, C, size=(N, C))
    ids[0, 0] = 2
    if ignore_class == -1:
        ids[0, 1] = -1
    if sparse:
        return ids, p.astype(np.float32)
    return np.moveaxis(np.eye(C, dtype=np.float32)[ids], -1, axis), p.astype(np.float32)


def regression_data(rank3):
    shape = (N, C, C) if rank3 else (N, C)
    return (
        RNG.normal(size=shape).astype(np.float32),
        (RNG.normal(size=shape) * 2).astype(np.float32),
    )


def positive_data():
    """Counts and positive rates (Poisson), or two distributions (KL divergence)."""
    y = RNG.integers(0, 4, size=(N, C)).astype(np.float32)
    return y, RNG.uniform(0.1, 3, size=(N, C)).astype(np.float32)


def distribution_data():
    y = probabilities((N, C))
    y[0, 0] = 0.0  # a zero target exercises the clipping
    return y.astype(np.float32), probabilities((N, C)).astype(np.float32)


def hinge_data(labels):
    """Targets 0/1 (mapped to -1/1), -1/1, or other values (used as given)."""
    y = RNG.integers(0, 2, size=(N, C)).astype(np.float32)
    if labels == "signed":
        y = 2 * y - 1
    if labels == "other":
        y = y * 2 - 0.5
    return y, (RNG.normal(size=(N, C)) * 1.5).astype(np.float32)


def mask_data():
    """0/1 segmentation targets and scores in [0, 1], shape (N, C, C)."""
    y = RNG.integers(0, 2, size=(N, C, C)).astype(np.float32)
    return y, RNG.uniform(0, 1, size=(N, C, C)).astype(np.float32)


def circle_data():
    """N integer labels of 3 classes and N unit-norm embeddings of 3 dims."""
    e = RNG.normal(size=(N, 3))
    return RNG.integers(0, 3, size=N), (e / np.linalg.norm(e, axis=1, keepdims=True)).astype(
        np.float32
    )


def np_circle(y, p, gamma=80.0, margin=0.4, remove_diagonal=True, axis=None):
    """Circle loss (Sun et al. 2020) by the formula, and Keras's mask loss > 0."""
    d = np.maximum(1 - p @ p.T, 0)
    pos = y[:, None] == y[None, :]
    neg = ~pos
    if remove_diagonal:
        pos &= ~np.eye(len(y), dtype=bool)
    pos_logits = -gamma * np.maximum((margin + d) * pos, 0) * (margin - d)
    neg_logits = gamma * np.maximum((1 + margin - d) * neg, 0) * (1 - margin - d)

    def logsumexp(mask, logits):
        out = np.full(len(y), -np.inf)
        for i in range(len(y)):
            if mask[i].any():
                top = logits[i][mask[i]].max()
                out[i] = top + np.log(np.exp(logits[i][mask[i]] - top).sum())
        return out

    values = np.logaddexp(0.0, logsumexp(pos, pos_logits) + logsumexp(neg, neg_logits))
    return values, values > 0


# -- the Keras 3 table: class, function, reference, argument grid, data ---------------------------
def grid(**choices):
    keys = list(choices)
    return [dict(zip(keys, values)) for values in itertools.product(*choices.values())]


KERAS = {
    "BinaryCrossentropy": dict(
        fn="binary_crossentropy",
        ref=np_bce,
        grid=grid(from_logits=[False, True], label_smoothing=[0.0, 0.2], axis=[-1, 1]),
        data=lambda kw: binary_data(True, kw["from_logits"]),
    ),
    "BinaryFocalCrossentropy": dict(
        fn="binary_focal_crossentropy",
        ref=np_bfce,
        grid=grid(
            apply_class_balancing=[False, True],
            gamma=[2.0, 0.5],
            from_logits=[False, True],
            label_smoothing=[0.0, 0.2],
        )
        + [{"alpha": 0.6, "apply_class_balancing": True, "axis": 1}],
        data=lambda kw: binary_data(True, kw.get("from_logits", False)),
    ),
    "CategoricalCrossentropy": dict(
        fn="categorical_crossentropy",
        ref=np_cce,
        grid=grid(from_logits=[False, True], label_smoothing=[0.0, 0.2], axis=[-1, 1]),
        data=lambda kw: categorical_data(kw["from_logits"], kw["axis"], sparse=False),
    ),
    "CategoricalFocalCrossentropy": dict(
        fn="categorical_focal_crossentropy",
        ref=np_cfce,
        grid=grid(from_logits=[False, True], label_smoothing=[0.0, 0.2], axis=[-1, 1])
        + [{"alpha": 0.5, "gamma": 1.0, "from_logits": False, "axis": -1}],
        data=lambda kw: categorical_data(kw["from_logits"], kw["axis"], sparse=False),
    ),
    "SparseCategoricalCrossentropy": dict(
        fn="sparse_categorical_crossentropy",
        ref=np_scce,
        grid=grid(from_logits=[False, True], ignore_class=[None, 2, -1], axis=[-1, 1]),
        data=lambda kw: categorical_data(kw["from_logits"], kw["axis"], True, kw["ignore_class"]),
    ),
    "CategoricalGeneralizedCrossEntropy": dict(
        fn="categorical_generalized_cross_entropy",
        ref=np_gce,
        grid=grid(q=[0.3, 0.7]),
        data=lambda kw: (RNG.integers(0, C, size=N), probabilities((N, C)).astype(np.float32)),
    ),
    "KLDivergence": dict(
        fn="kl_divergence", ref=np_kld, grid=[{}], data=lambda kw: distribution_data()
    ),
    "Poisson": dict(fn="poisson", ref=np_poisson, grid=[{}], data=lambda kw: positive_data()),
    "MeanSquaredError": dict(
        fn="mean_squared_error", ref=np_mse, grid=[{}], data=lambda kw: regression_data(True)
    ),
    "MeanAbsoluteError": dict(
        fn="mean_absolute_error", ref=np_mae, grid=[{}], data=lambda kw: regression_data(True)
    ),
    "MeanAbsolutePercentageError": dict(
        fn="mean_absolute_percentage_error",
        ref=np_mape,
        grid=[{}],
        data=lambda kw: regression_data(True),
    ),
    "MeanSquaredLogarithmicError": dict(
        fn="mean_squared_logarithmic_error",
        ref=np_msle,
        grid=[{}],
        data=lambda kw: regression_data(True),
    ),
    "CosineSimilarity": dict(
        fn="cosine_similarity",
        ref=np_cosine,
        grid=grid(axis=[-1, 1]),
        data=lambda kw: regression_data(True),
    ),
    "Huber": dict(
        fn="huber", ref=np_huber, grid=grid(delta=[1.0, 0.5]), data=lambda kw: regression_data(True)
    ),
    "LogCosh": dict(
        fn="log_cosh", ref=np_log_cosh, grid=[{}], data=lambda kw: regression_data(True)
    ),
    "Hinge": dict(
        fn="hinge",
        ref=np_hinge,
        grid=[{}],
        data=lambda kw: hinge_data(kw.get("labels", "binary")),
        data_grid=["binary", "signed", "other"],
    ),
    "SquaredHinge": dict(
        fn="squared_hinge",
        ref=np_squared_hinge,
        grid=[{}],
        data=lambda kw: hinge_data(kw.get("labels", "binary")),
        data_grid=["binary", "signed"],
    ),
    "CategoricalHinge": dict(
        fn="categorical_hinge",
        ref=np_categorical_hinge,
        grid=[{}],
        data=lambda kw: categorical_data(False, -1, sparse=False),
    ),
    "CTC": dict(fn="ctc", ref=np_ctc, grid=[{}], data=lambda kw: ctc_data()),
    "Dice": dict(
        fn="dice", ref=np_dice, grid=grid(axis=[None, (1, 2)]), data=lambda kw: mask_data()
    ),
    "Circle": dict(
        fn="circle",
        ref=np_circle,
        grid=[{}, {"gamma": 4.0, "margin": 0.25, "remove_diagonal": False}],
        data=lambda kw: circle_data(),
    ),
    "Tversky": dict(
        fn="tversky",
        ref=np_tversky,
        grid=[{}, {"alpha": 0.7, "beta": 0.3, "axis": (1, 2)}, {"alpha": 0.2, "beta": 0.9}],
        data=lambda kw: mask_data(),
    ),
}


def keras_functions(names):
    """The exported names that are a Keras function of the table, or a name Keras and TF1
    share (sl.losses.mean_squared_error: both, by the keywords; tested below)."""
    functions = {id(sl.losses.get(row["fn"])) for row in KERAS.values()}
    return {
        n
        for n in names
        for m in namespaces()
        if id(getattr(m, n, None)) in functions or hasattr(getattr(m, n, None), "keras_function")
    }


class MeanAbsolute(Loss):
    """A user's Loss subclass: the base class's reductions, weights and config."""

    def call(self, y_true, y_pred):
        return sl.reduce_mean(sl.abs(y_true - y_pred), axis=-1)


# the rows whose class is checked with every reduction and weight shape (the reduction is the
# base class's, the same for all: a plain loss, a masked one, one giving a scalar per batch)
EVERY_REDUCTION = ("MeanSquaredError", "SparseCategoricalCrossentropy", "Dice")


def _class_cases(cls_name, cls, kw, y, p, values, mask, every_reduction):
    """The class's cases: every reduction and weight shape (`every_reduction`), else the
    default reduction with one weight per sample and "none"."""
    weights = [
        None,
        RNG.uniform(0, 2, size=N).astype(np.float32),
        RNG.uniform(0, 2, size=np.shape(values)).astype(np.float32),
    ]
    cases = []
    for reduction, w in itertools.product(REDUCTIONS, weights):
        if not every_reduction and (reduction, np.shape(w)) not in (
            ("sum_over_batch_size", (N,)),
            ("none", ()),
        ):
            continue
        if w is not None and w.shape != (N,) and reduction not in ("sum", "none"):
            continue  # full weights: two reductions suffice
        loss = cls(reduction=reduction, **kw)
        label = f"{cls_name}({kw}, {reduction!r}, sw={None if w is None else w.shape})"
        expected = np_reduce(values, None if w is None else w.astype(np.float64), mask, reduction)
        cases.append((label, loss(y, p, sample_weight=w), expected))
    return cases


def keras_cases():
    """(label, tensor, expected) for every Keras loss, argument set, reduction and weight."""
    cases = []
    for cls_name, row in KERAS.items():
        cls = getattr(sl.losses, cls_name)
        fn = sl.losses.get(row["fn"])
        first = True
        for kw, labels in itertools.product(row["grid"], row.get("data_grid", [None])):
            y, p = row["data"]({**kw, "labels": labels})
            y64 = y.astype(np.float64) if y.dtype.kind == "f" else y
            ref = row["ref"](y64, p.astype(np.float64), **kw)
            values, mask = ref if isinstance(ref, tuple) else (ref, None)
            expected = np.where(mask, values, 0.0) if mask is not None else values
            cases.append((f"{row['fn']}({kw}, labels={labels})", fn(y, p, **kw), expected))
            every_reduction = first and cls_name in EVERY_REDUCTION
            cases += _class_cases(cls_name, cls, kw, y, p, values, mask, every_reduction)
            first = False
    y, p = regression_data(True)
    values = np_mae(y.astype(np.float64), p.astype(np.float64))
    for reduction in REDUCTIONS:
        cases.append(
            (
                f"Loss subclass, {reduction!r}",
                MeanAbsolute(reduction=reduction)(y, p),
                np_reduce(values, None, None, reduction),
            )
        )
    return cases


def test_every_export_is_covered():
    names = exported()
    covered = set(KERAS) | keras_functions(names) | set(TF1) | set(HELPERS)
    missing = sorted(names - covered)
    assert not missing, f"losses exported without a row in this test's tables: {missing}"


def test_keras_losses_every_argument_combination():
    cases = keras_cases()
    with sl.Session(config=INTERPRETED) as s:
        got = s.run([t for _, t, _ in cases])
    for (label, tensor, expected), value in zip(cases, got):
        assert value.shape == np.shape(expected), label
        assert np.all(np.isfinite(value)), label
        np.testing.assert_allclose(value, expected, rtol=2e-5, atol=2e-5, err_msg=label)


def _listed(config):
    """A config as JSON gives it back (tuples become lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in config.items()}


def test_keras_losses_config_round_trip():
    """get_config / from_config, and serialize / get(config), give the same loss and value."""
    tensors = []
    for cls_name, row in KERAS.items():
        cls = getattr(sl.losses, cls_name)
        for kw in row["grid"]:
            loss = cls(reduction="sum", name=f"my_{cls_name}", **kw)
            config = loss.get_config()
            assert config["name"] == f"my_{cls_name}" and config["reduction"] == "sum"
            assert {k: config[k] for k in kw} == kw, cls_name
            again = cls.from_config(config)
            assert type(again) is cls and again.get_config() == config
            saved = sl.losses.serialize(loss)
            assert saved["module"] == "keras.losses" and saved["class_name"] == cls_name
            by_name = sl.losses.deserialize(saved)
            assert type(by_name) is cls and _listed(by_name.get_config()) == _listed(config)
            assert type(sl.losses.get(cls_name)) is cls
            assert type(sl.losses.get(cls)) is cls
            y, p = row["data"]({"axis": -1, **kw})
            tensors.append((loss(y, p), again(y, p), by_name(y, p)))
    custom = MeanAbsolute.from_config(MeanAbsolute(reduction="sum", name="m").get_config())
    assert custom.reduction == "sum" and custom.name == "m"
    with sl.Session(config=INTERPRETED) as s:
        for a, b, c in s.run(tensors):
            np.testing.assert_allclose([b, c], [a, a], rtol=1e-6)


def test_functions_serialize_as_keras_3_names_them():
    """A function is saved as Keras 3 saves it ("keras.losses.<name>"), the Keras function of a
    name TF1 shares too, and read back as the Keras function."""
    for name in ("mse", "mean_squared_error", "kld", "huber", "binary_crossentropy"):
        fn = sl.losses.get(name)
        saved = sl.losses.serialize(fn)
        assert saved == {
            "module": "keras.losses",
            "class_name": "function",
            "config": fn.__name__,
            "registered_name": fn.__name__,
        }
        assert sl.losses.deserialize(saved) is fn
        assert sl.losses.get(saved) is fn
    assert sl.losses.serialize(sl.losses.mean_squared_error)["config"] == "mean_squared_error"
    assert sl.losses.get("mse").__name__ == "mean_squared_error"


def test_categorical_label_smoothing_counts_the_classes_on_y_pred_axis():
    """Keras 3 (since its fix #23437) smooths with label_smoothing / y_pred.shape[axis]: classes
    on axis 1 of (N, C, T) targets are smoothed over C."""
    ids = RNG.integers(0, C, size=(N, 5))
    y = np.moveaxis(np.eye(C, dtype=np.float32)[ids], -1, 1)  # (N, C, 5)
    p = probabilities((N, C, 5), axis=1).astype(np.float32)
    smoothed = y.astype(np.float64) * 0.8 + 0.2 / C
    expected = -(smoothed * np.log(np_clip(p.astype(np.float64)))).sum(1)
    loss = sl.losses.CategoricalCrossentropy(label_smoothing=0.2, axis=1, reduction="none")
    with sl.Session(config=INTERPRETED) as s:
        np.testing.assert_allclose(s.run(loss(y, p)), expected, rtol=2e-5)


def test_keras_loss_rejects_an_unknown_reduction():
    with pytest.raises(ValueError, match="Invalid reduction"):
        sl.losses.BinaryCrossentropy(reduction="avg")


# -- TF1's tf.losses ----------------------------------------------------------------------------
R = sl.losses.Reduction


def np_weighted(losses, weights, reduction):
    """TF1's `compute_weighted_loss` (every division div_no_nan)."""
    w = np.broadcast_to(np.asarray(weights, np.float64), losses.shape)
    weighted = losses * w
    if reduction == R.NONE:
        return weighted
    total = weighted.sum()
    divisor = {
        R.SUM: 1.0,
        R.MEAN: w.sum(),
        R.SUM_OVER_BATCH_SIZE: losses.size,
        R.SUM_BY_NONZERO_WEIGHTS: np.count_nonzero(w),
    }[reduction]
    return total / divisor if divisor else 0.0


def _sigmoid_xent(y, x, label_smoothing=0):
    if label_smoothing:
        y = y * (1 - label_smoothing) + 0.5 * label_smoothing
    return np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))


def _softmax_xent(y, x, label_smoothing=0):
    if label_smoothing:
        y = y * (1 - label_smoothing) + label_smoothing / y.shape[-1]
    return -(y * (x - np.log(np.exp(x).sum(-1, keepdims=True)))).sum(-1)


def _sparse_xent(ids, x):
    log_p = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return -np.take_along_axis(log_p, ids[:, None], -1)[:, 0]


def _unit(x, axis):
    return x / np.linalg.norm(x, axis=axis, keepdims=True)


def _tf1_data(name):
    y, p = regression_data(False)
    if name in ("log_loss",):
        return RNG.integers(0, 2, size=(N, C)).astype(np.float32), RNG.uniform(0, 1, (N, C))
    if name in ("hinge_loss", "sigmoid_cross_entropy"):
        return RNG.integers(0, 2, size=(N, C)).astype(np.float32), p * 2
    if name == "softmax_cross_entropy":
        return np.eye(C, dtype=np.float32)[RNG.integers(0, C, N)], p * 2
    if name == "sparse_softmax_cross_entropy":
        return RNG.integers(0, C, N), p * 2
    if name == "cosine_distance":
        return _unit(y, 1), _unit(p, 1)
    return y, p


# name -> (extra argument grid, per-element reference(labels, predictions, **extra), the
# per-element losses' shape relative to the data: "same", "rows" (one per example), "kept")
TF1 = {
    "absolute_difference": ([{}], lambda y, p: np.abs(p - y), "same"),
    "mean_squared_error": ([{}], lambda y, p: (p - y) ** 2, "same"),
    "huber_loss": (
        grid(delta=[1.0, 0.3]),
        lambda y, p, delta: np_huber(y[..., None], p[..., None], delta),
        "same",
    ),
    "log_loss": (
        grid(epsilon=[1e-7, 1e-3]),
        lambda y, p, epsilon: -y * np.log(p + epsilon) - (1 - y) * np.log(1 - p + epsilon),
        "same",
    ),
    "hinge_loss": ([{}], lambda y, p: np.maximum(0, 1 - (2 * y - 1) * p), "same"),
    "cosine_distance": (
        [{"axis": 1}],
        lambda y, p, axis: 1 - (y * p).sum(axis, keepdims=True),
        "kept",
    ),
    "sigmoid_cross_entropy": (grid(label_smoothing=[0, 0.2]), _sigmoid_xent, "same"),
    "softmax_cross_entropy": (grid(label_smoothing=[0, 0.2]), _softmax_xent, "rows"),
    "sparse_softmax_cross_entropy": ([{}], _sparse_xent, "rows"),
    "compute_weighted_loss": ([{}], None, "same"),
    "mean_pairwise_squared_error": ([{}], None, "pairs"),
}
_LABEL_NAMES = {
    "sigmoid_cross_entropy": "multi_class_labels",
    "softmax_cross_entropy": "onehot_labels",
}


def _weights(shape):
    """Scalars, one weight per example, and full weights with zeros (TF1's shapes)."""
    full = RNG.uniform(0.5, 2, size=shape)
    full.reshape(-1)[::3] = 0.0
    per_example = RNG.uniform(0.5, 2, size=(shape[0],) + (1,) * (len(shape) - 1))
    per_example[0] = 0.0
    found = [1.0, 2.5, per_example.astype(np.float32), full.astype(np.float32)]
    return [w for w in found if np.ndim(w) == 0 or len(shape) > 1 or np.shape(w) == shape]


def np_pairwise(y, p, weights):
    d = (p - y).reshape(len(y), -1)
    n = d.shape[1]
    per_row = 2 * (d**2).sum(1) / (n - 1) - 2 * d.sum(1) ** 2 / (n * (n - 1))
    return float((per_row * np.broadcast_to(np.reshape(weights, -1), (len(y),))).sum())


def tf1_cases():
    cases = []
    for name, (extras, ref, kind) in TF1.items():
        fn = getattr(sl.losses, name)
        y, p = _tf1_data(name)
        y64 = y if y.dtype.kind == "i" else np.asarray(y, np.float64)
        p64 = np.asarray(p, np.float64)
        for extra in extras:
            if name == "mean_pairwise_squared_error":
                for w in [1.0, 2.0, np.array([0.0, 1.0, 2.0, 0.5], np.float32)]:
                    cases.append(
                        (f"{name}(weights={w})", fn(y, p, weights=w), np_pairwise(y64, p64, w))
                    )
                continue
            per_element = np.abs(p64 - y64) if ref is None else ref(y64, p64, **extra)
            shape = per_element.shape
            for w, reduction in itertools.product(_weights(shape), sorted(set(R.all()))):
                label = f"{name}({extra}, weights={np.shape(w)}, reduction={reduction})"
                if name == "compute_weighted_loss":
                    t = fn(np.abs(p - y), weights=w, reduction=reduction)
                else:
                    labels = {_LABEL_NAMES.get(name, "labels"): y}
                    other = (
                        "logits"
                        if name in ("hinge_loss",) or "cross_entropy" in name
                        else "predictions"
                    )
                    t = fn(**labels, **{other: p}, weights=w, reduction=reduction, **extra)
                cases.append((label, t, np_weighted(per_element, w, reduction)))
    return cases


def test_tf1_losses_every_argument_combination():
    with sl.Graph().as_default():
        cases = tf1_cases()
        collected = sl.losses.get_losses()
        with sl.Session(config=INTERPRETED) as s:
            got = s.run([t for _, t, _ in cases])
    assert len(collected) == len(cases)  # each went to GraphKeys.LOSSES
    for (label, _, expected), value in zip(cases, got):
        assert value.shape == np.shape(expected), label
        assert np.all(np.isfinite(value)), label
        np.testing.assert_allclose(value, expected, rtol=2e-5, atol=2e-5, err_msg=label)


# -- the helpers around the losses ---------------------------------------------------------------
def check_collections():
    with sl.Graph().as_default():
        a = sl.losses.absolute_difference([1.0, 2.0], [1.5, 2.0])  # collected
        sl.losses.mean_squared_error([1.0], [3.0], loss_collection=None)  # not collected
        extra = sl.constant(10.0)
        sl.losses.add_loss(extra)
        w = sl.get_variable(
            "w",
            [2],
            initializer=sl.ones_initializer(),
            regularizer=lambda v: 0.5 * sl.reduce_sum(v * v),
        )
        assert sl.losses.get_losses() == [a, extra]
        assert len(sl.losses.get_regularization_losses()) == 1
        total = sl.losses.get_total_loss()
        plain = sl.losses.get_total_loss(add_regularization_losses=False)
        with sl.Session() as s:
            s.run(sl.global_variables_initializer())
            got = s.run([total, plain, sl.losses.get_regularization_loss()])
        np.testing.assert_allclose(got, [0.25 + 10.0 + 1.0, 10.25, 1.0], rtol=1e-6)
        assert w is not None
    with sl.Graph().as_default(), pytest.raises(ValueError, match="no losses"):
        sl.losses.get_total_loss()


def check_reduction():
    assert len(set(R.all())) == 5 and R.SUM_OVER_NONZERO_WEIGHTS == R.SUM_BY_NONZERO_WEIGHTS
    with pytest.raises(ValueError, match="Invalid Reduction Key"):
        sl.losses.compute_weighted_loss([1.0], reduction="avg")


def check_get():
    assert sl.losses.get(None) is None
    assert sl.losses.get("mse") is sl.losses.get("mean_squared_error")
    loss = sl.losses.Huber(delta=2.0)
    assert sl.losses.get(loss) is loss
    with pytest.raises(ValueError, match="Unknown loss"):
        sl.losses.get("no_such_loss")


HELPERS = {
    "Loss": None,
    "Reduction": check_reduction,
    "add_loss": check_collections,
    "get_losses": check_collections,
    "get_total_loss": check_collections,
    "get_regularization_loss": check_collections,
    "get_regularization_losses": check_collections,
    "get": check_get,
    "serialize": None,
    "deserialize": None,  # the round-trip test
}


@pytest.mark.parametrize(
    "check",
    sorted({f for f in HELPERS.values() if f}, key=lambda f: f.__name__),
    ids=lambda f: f.__name__,
)
def test_helpers(check):
    check()
