"""Evenly spaced thresholds (AUC's by default, or given ones such as [0, 0.5, 1]) are counted by
bucketing, as Keras 3 does: memory O(batch + thresholds), not thresholds x batch, and the same
numbers as comparing every prediction with every threshold."""

import numpy as np
import pytest

import sluice as sl
from sluice._keras.metrics import confusion_metrics

M = sl.metrics
RNG = np.random.default_rng(0)
Y = (RNG.random((12, 3)) > 0.5).astype(np.float32)
P = RNG.random((12, 3)).astype(np.float32)
W = RNG.random(12).astype(np.float32)

CASES = [
    ("AUC", {}),
    ("AUC", {"curve": "PR"}),
    ("AUC", {"curve": "PR", "summation_method": "majoring"}),
    ("AUC", {"summation_method": "minoring"}),
    ("AUC", {"curve": "PRGAIN"}),
    ("AUC", {"num_thresholds": 7, "from_logits": True}),
    ("AUC", {"multi_label": True}),
    ("AUC", {"multi_label": True, "num_labels": 3, "curve": "PR"}),
    ("AUC", {"multi_label": True, "label_weights": [1.0, 2.0, 3.0]}),
    ("AUC", {"label_weights": [1.0, 2.0, 3.0]}),
    ("AUC", {"thresholds": [0.25, 0.5, 0.75]}),
    ("Precision", {"thresholds": [0.0, 0.5, 1.0]}),
    ("Precision", {"thresholds": [0.0, 0.5, 1.0], "top_k": 2}),
    ("Recall", {"thresholds": [0.0, 0.25, 0.5, 0.75, 1.0], "class_id": 1}),
    ("TrueNegatives", {"thresholds": [0.0, 0.5, 1.0]}),
    ("FalseNegatives", {"thresholds": [0.0, 0.5, 1.0]}),
]


def _result(cls_name, kwargs):
    m = getattr(M, cls_name)(**kwargs)
    m.update_state(Y, P, sample_weight=W)
    m.update_state(Y[::-1], P[::-1])
    return np.asarray(m.result())


FAST = {0, 7, 12}  # the others with -m slow: each compiles four small steps (seconds)


@pytest.mark.parametrize(
    "cls_name,kwargs",
    [
        pytest.param(c, k, id=f"{c}{k}", marks=() if i in FAST else pytest.mark.slow)
        for i, (c, k) in enumerate(CASES)
    ],
)
def test_buckets_equal_comparing_with_every_threshold(cls_name, kwargs, monkeypatch):
    bucketed = _result(cls_name, kwargs)
    monkeypatch.setattr(confusion_metrics, "evenly_spaced", lambda thresholds: False)
    compared = _result(cls_name, kwargs)
    np.testing.assert_allclose(bucketed, compared, rtol=1e-5, atol=1e-6)


def test_evenly_spaced_thresholds():
    auc = M.AUC(num_thresholds=5)
    assert confusion_metrics.evenly_spaced(auc.thresholds)  # -eps, 0.25, 0.5, 0.75, 1 + eps
    assert confusion_metrics.evenly_spaced([0.0, 0.5, 1.0])
    assert not confusion_metrics.evenly_spaced([0.0, 1.0])  # fewer than 3: compared
    assert not confusion_metrics.evenly_spaced([0.0, 0.4, 1.0])
    assert not confusion_metrics.evenly_spaced(M.AUC(thresholds=[0.3, 0.5]).thresholds)


def test_counts_by_hand_at_the_edges():
    """Thresholds -eps, 0.5, 1 + eps: p > t counts; 0 is above -eps, 0.5 is not above 0.5,
    nothing is above 1 + eps; predictions outside [0, 1] are clipped (Keras)."""
    auc = M.AUC(num_thresholds=3)
    auc.update_state([1, 0, 1, 0, 1, 1], [0.0, 0.5, 0.5001, 1.0, 1.7, -0.2], [1, 1, 1, 1, 2, 1])
    tp, fp, tn, fn = (v.numpy() for v in auc.variables)
    np.testing.assert_allclose(tp, [5.0, 3.0, 0.0])  # positives weigh 1 + 1 + 2 + 1
    np.testing.assert_allclose(fp, [2.0, 1.0, 0.0])
    np.testing.assert_allclose(tn, [0.0, 1.0, 2.0])
    np.testing.assert_allclose(fn, [0.0, 2.0, 5.0])
    m = M.AUC(num_thresholds=3)
    m.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
    assert m.result() == 0.75  # Keras 3's example


def test_memory_is_batch_plus_thresholds():
    """No tensor of the update holds thresholds x batch values (200 x 1000 here)."""
    g = sl.Graph()
    with g.as_default():
        y = sl.placeholder(sl.float32, [1000, 4])
        p = sl.placeholder(sl.float32, [1000, 4])
        for auc in (M.AUC(), M.AUC(multi_label=True)):
            ops_before = len(g.get_operations())
            auc.update_state(y, p)
            sizes = [
                t.shape.num_elements()
                for op in g.get_operations()[ops_before:]
                for t in op.outputs
                if t.shape.is_fully_defined()
            ]
            assert max(sizes) <= 4000, max(sizes)
