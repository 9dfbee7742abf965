"""Metrics in `compile(metrics=[...])`, by object and by name, as Keras 3 logs them: each
evaluated over every batch of `evaluate` equals the metric computed standalone on the model's
predictions of the whole data."""

import numpy as np

import sluice as sl

RNG = np.random.default_rng(3)


def test_compiled_metrics_by_name_and_object_match_standalone_metrics():
    x = RNG.normal(size=(24, 4)).astype(np.float32)
    labels = RNG.integers(0, 3, 24)
    y = np.eye(3, dtype=np.float32)[labels]
    model = sl.Sequential([sl.Input((4,)), sl.layers.Dense(3, activation="softmax")])
    named = ["auc", "precision", "recall", "top_k_categorical_accuracy", "categorical_accuracy"]
    objects = [
        sl.metrics.TopKCategoricalAccuracy(k=2, name="top2"),
        sl.metrics.AUC(curve="PR", name="pr_auc"),
        sl.metrics.F1Score(average="macro", name="f1"),
        sl.metrics.MeanIoU(num_classes=3, sparse_y_true=False, sparse_y_pred=False, name="iou"),
        sl.metrics.Precision(class_id=1, name="precision_1"),
    ]
    model.compile("sgd", sl.losses.CategoricalCrossentropy(), metrics=named + objects)
    logs = model.evaluate(x, y, batch_size=7, verbose=0, return_dict=True)
    assert set(logs) == {"loss", *named, "top2", "pr_auc", "f1", "iou", "precision_1"}
    p = model.predict(x, verbose=0)
    standalone = {
        "auc": sl.metrics.AUC(),
        "precision": sl.metrics.Precision(),
        "recall": sl.metrics.Recall(),
        "top_k_categorical_accuracy": sl.metrics.TopKCategoricalAccuracy(),
        "categorical_accuracy": sl.metrics.CategoricalAccuracy(),
        "top2": sl.metrics.TopKCategoricalAccuracy(k=2),
        "pr_auc": sl.metrics.AUC(curve="PR"),
        "f1": sl.metrics.F1Score(average="macro"),
        "iou": sl.metrics.MeanIoU(num_classes=3, sparse_y_true=False, sparse_y_pred=False),
        "precision_1": sl.metrics.Precision(class_id=1),
    }
    for name, metric in standalone.items():
        metric.update_state(y, p)
        np.testing.assert_allclose(logs[name], metric.result(), rtol=1e-5, atol=1e-6, err_msg=name)
    cce = sl.losses.CategoricalCrossentropy()(y, p)
    np.testing.assert_allclose(logs["loss"], sl.Session().run(cce), rtol=1e-5)


def test_fit_logs_metric_history_and_resets_each_epoch():
    x = RNG.normal(size=(16, 2)).astype(np.float32)
    y = (x.sum(-1) > 0).astype(np.float32)[:, None]
    model = sl.Sequential([sl.Input((2,)), sl.layers.Dense(1, activation="sigmoid")])
    model.compile(
        sl.optimizers.SGD(0.5), "binary_crossentropy", metrics=["auc", sl.metrics.Recall()]
    )
    history = model.fit(x, y, epochs=3, batch_size=4, verbose=0)
    assert len(history.history["auc"]) == 3 and len(history.history["recall"]) == 3
    assert all(0.0 <= v <= 1.0 for v in history.history["auc"])
