"""Metric names as Keras 3 gives them: `auto_name` for classes without a default name (AUC(),
AUC() are "auc", "auc_1"), fixed defaults for the others, and compiled metrics whose names
clash logged as `<name>_1`, `<name>_2` (Keras 3's `CompileMetrics.result`)."""

import numpy as np

import sluice as sl

M = sl.metrics


def test_default_names():
    assert [M.AUC().name, M.AUC().name, M.Precision().name] == ["auc", "auc_1", "precision"]
    assert [M.Mean().name, M.Mean().name] == ["mean", "mean"]  # a fixed default, as Keras's
    assert M.MeanIoU(num_classes=2).name == "mean_io_u"
    assert M.MeanMetricWrapper(lambda y, p: p).name == "mean_metric_wrapper"
    assert M.AUC(name="mine").name == "mine"
    assert sl.backend.get_uid("auc") == 3  # Keras shares the counters with get_uid


def _history(metrics):
    inputs = sl.Input((2,))
    model = sl.Model(inputs, sl.layers.Dense(1, activation="sigmoid")(inputs))
    model.compile("sgd", "binary_crossentropy", metrics=metrics)
    x = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.5, 0.2]], np.float32)
    y = np.array([[0.0], [1.0], [1.0], [0.0]], np.float32)
    return model.fit(x, y, epochs=1, verbose=0).history


def test_compiled_names_as_keras_logs_them():
    """A name and an object of one class log apart ("auc", "auc_1"); so do a name given twice;
    objects log under their own names."""
    M.AUC()  # takes "auc"
    history = _history(["auc", M.AUC(), "mae", "mae", M.AUC(curve="PR")])
    assert list(history) == ["loss", "auc", "auc_1", "mae", "mae_1", "auc_2"]
    assert history["mae"] == history["mae_1"] and history["auc"] == history["auc_1"]
