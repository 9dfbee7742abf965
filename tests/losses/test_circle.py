"""Circle loss against the numbers of Keras 3's own tests (keras/src/losses/losses_test.py,
CircleTest): the defaults, another gamma and margin, references of their own, sample weights,
no reduction (queries with no positive pair masked out) and a sum."""

import numpy as np

import sluice as sl

Y = np.array([1, 1, 2, 2, 3])
P = np.array([
    [0.70014004, -0.42008403, 0.14002801, 0.56011203],
    [0.17609018, 0.70436073, -0.52827054, 0.44022545],
    [-0.34050261, 0.25537696, -0.68100522, 0.59587957],
    [0.32163376, -0.75047877, 0.53605627, -0.21442251],
    [0.51261459, -0.34174306, 0.17087153, 0.76892189],
], np.float32)  # fmt: skip
REF_LABELS = np.array([1, 1, 2, 2, 3, 4])
REF = np.array([
    [0.40824829, -0.54433105, 0.27216553, 0.68041382],
    [0.76376261, 0.10910895, -0.54554473, 0.32732684],
    [-0.74420841, 0.24806947, 0.49613894, -0.3721042],
    [0.52981294, -0.13245324, 0.79471941, -0.26490647],
    [0.54554473, -0.32732684, 0.10910895, 0.76376261],
    [-0.27216553, 0.68041382, 0.40824829, -0.54433105],
], np.float32)  # fmt: skip


def test_circle_as_keras_tests_it():
    L = sl.losses
    cases = [
        (L.Circle(gamma=80.0, margin=0.4)(Y, P), 188.3883),
        (L.Circle(gamma=256, margin=0.25)(Y, P), 652.7617),
        (
            L.circle(Y, P, ref_labels=REF_LABELS, ref_embeddings=REF, remove_diagonal=False),
            [61.5844, 94.3465, 276.9344, 90.9873, 48.8963],
        ),
        (L.Circle()(Y, P, sample_weight=np.array([2.0, 2.0, 1.0, 1.0, 0.5])), 244.91918),
        (L.Circle(reduction=None)(REF_LABELS, REF), [82.9116, 36.7942, 92.4590, 52.6798, 0, 0]),
        (L.Circle(reduction="sum")(REF_LABELS, REF), 264.845),
    ]
    with sl.Session(config=sl.SessionConfig(engine="interpreted")) as sess:  # small graphs
        got = sess.run([t for t, _ in cases])
    for value, (_, want) in zip(got, cases):
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-3)
    config = L.Circle(name="mycircle", margin=0.3).get_config()
    assert config == {
        "name": "mycircle", "reduction": "sum_over_batch_size", "gamma": 80.0, "margin": 0.3,
        "remove_diagonal": True,
    }  # fmt: skip
    assert L.get(L.serialize(L.Circle(margin=0.3))).margin == 0.3
