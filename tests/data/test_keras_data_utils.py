"""keras.utils data helpers: timeseries_dataset_from_array, split_dataset, PyDataset/Sequence
read by fit, evaluate and predict."""

import random

import numpy as np
import pytest

import sluice as sl
from sluice._tf1.data.iterators import host_elements


def batches(dataset):
    return list(host_elements(dataset))


def numpy_windows(data, targets, length, stride, rate, start, end):
    """Keras's windows written out with NumPy: window i starts at row start + p_i."""
    end = len(data) if end is None else end
    count = end - start - (length - 1) * rate
    if targets is not None:
        count = min(count, len(targets))
    firsts = range(0, count, stride)
    xs = [data[start + p + rate * np.arange(length)] for p in firsts]
    ys = None if targets is None else [targets[start + p] for p in firsts]
    return np.array(xs), None if ys is None else np.array(ys)


@pytest.mark.parametrize(
    "length, stride, rate, start, end, batch",
    [(3, 1, 1, None, None, 4), (4, 2, 3, 2, 27, 3), (5, 3, 2, 1, None, None)],
)
def test_timeseries_windows_equal_a_numpy_construction(length, stride, rate, start, end, batch):
    data = np.arange(60, dtype=np.float32).reshape(30, 2)
    targets = np.arange(30) * 10
    ds = sl.utils.timeseries_dataset_from_array(
        data, targets, length, stride, rate, batch_size=batch, start_index=start, end_index=end
    )
    got = batches(ds)
    if batch is None:
        xs, ys = np.stack([x for x, _ in got]), np.stack([y for _, y in got])
    else:
        assert all(len(x) <= batch for x, _ in got) and len(got[0][0]) == batch
        xs, ys = np.concatenate([x for x, _ in got]), np.concatenate([y for _, y in got])
    want_x, want_y = numpy_windows(data, targets, length, stride, rate, start or 0, end)
    np.testing.assert_array_equal(xs, want_x)
    np.testing.assert_array_equal(ys, want_y)


def test_timeseries_without_targets_and_fewer_targets_than_rows():
    data = np.arange(10)
    (x,) = batches(sl.utils.timeseries_dataset_from_array(data, None, 3, batch_size=None))[:1]
    assert x.tolist() == [0, 1, 2]
    # the targets bound the number of windows (Keras's min(num_seqs, len(targets)))
    got = batches(sl.utils.timeseries_dataset_from_array(data, np.arange(4), 2, batch_size=10))
    assert got[0][0].shape == (4, 2) and got[0][1].tolist() == [0, 1, 2, 3]


def test_timeseries_shuffle_is_seeded_and_keeps_every_window():
    data = np.arange(40)
    targets = np.arange(40) * 2

    def run(seed):
        got = batches(
            sl.utils.timeseries_dataset_from_array(
                data, targets, 4, batch_size=5, shuffle=True, seed=seed
            )
        )
        return np.concatenate([x for x, _ in got]), np.concatenate([y for _, y in got])

    (xa, ya), (xb, _), (xc, _) = run(7), run(7), run(8)
    np.testing.assert_array_equal(xa, xb)
    assert not np.array_equal(xa, xc)
    assert sorted(xa[:, 0].tolist()) == list(range(37))
    np.testing.assert_array_equal(ya, 2 * xa[:, 0])  # each window keeps its own target
    np.testing.assert_array_equal(xa - xa[:, :1], np.tile(np.arange(4), (37, 1)))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"start_index": -1}, "`start_index` must be 0 or greater"),
        ({"end_index": 10}, "`end_index` must be lower than the length of the data"),
        ({"start_index": 5, "end_index": 4}, "`end_index` must be higher than `start_index`"),
        ({"sampling_rate": 0}, "`sampling_rate` must be higher than 0"),
        ({"sequence_stride": 10}, "`sequence_stride` must be lower than the length"),
    ],
)
def test_timeseries_argument_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sl.utils.timeseries_dataset_from_array(np.arange(10), None, 2, **kwargs)


def test_a_model_fits_on_timeseries_windows():
    series = np.sin(np.arange(64) / 4).astype(np.float32)[:, None]
    ds = sl.utils.timeseries_dataset_from_array(series[:-4], series[4:, 0], 4, batch_size=16)
    model = sl.Sequential([sl.Input((4, 1)), sl.layers.Flatten(), sl.layers.Dense(1)])
    model.compile(sl.optimizers.SGD(0.1), "mse")
    history = model.fit(ds, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.predict(ds, verbose=0).shape == (57, 1)


def test_split_dataset_sizes_and_shuffle():
    x = np.arange(20).reshape(10, 2)
    y = np.arange(10)
    left, right = sl.utils.split_dataset((x, y), left_size=0.7)
    assert [int(b) for _, b in batches(left)] == list(range(7))
    assert [int(b) for _, b in batches(right)] == [7, 8, 9]
    left, right = sl.utils.split_dataset(x, right_size=2, shuffle=True, seed=5)
    order = list(range(10))
    random.Random(5).shuffle(order)  # Keras's random.seed(5); random.shuffle(...)
    np.testing.assert_array_equal(np.stack(batches(left)), x[order[:8]])
    np.testing.assert_array_equal(np.stack(batches(right)), x[order[8:]])
    left, right = sl.utils.split_dataset(sl.data.Dataset.from_tensor_slices(y), left_size=4)
    assert [int(b) for b in batches(right)] == [4, 5, 6, 7, 8, 9]


@pytest.mark.parametrize(
    "sizes, message",
    [
        ({}, "At least one of the `left_size` or `right_size`"),
        ({"left_size": 1.5}, "`left_size` should be either a positive integer"),
        ({"left_size": 0.6, "right_size": 0.6}, "greater than 1"),
        ({"left_size": 6, "right_size": 6}, "should be smaller than the 10"),
        ({"left_size": "3"}, "Invalid `left_size` Type"),
    ],
)
def test_split_dataset_errors(sizes, message):
    with pytest.raises((ValueError, TypeError), match=message):
        sl.utils.split_dataset(np.arange(10), **sizes)


class Squares(sl.utils.PyDataset):
    """Batch i holds x = i + [0, 0.5] and y = x**2; records the calls it gets."""

    def __init__(self, batches=4, **kwargs):
        super().__init__(**kwargs)
        self.batches, self.read, self.epochs_ended = batches, [], 0

    def __len__(self):
        return self.batches

    def __getitem__(self, index):
        self.read.append(index)
        x = (index + np.array([[0.0], [0.5]])).astype(np.float32) / 4
        return x, x**2

    def on_epoch_end(self):
        self.epochs_ended += 1


def small_model():
    model = sl.Sequential([sl.Input((1,)), sl.layers.Dense(1, kernel_initializer="ones")])
    model.compile(sl.optimizers.SGD(0.1), "mse")
    return model


def test_fit_reads_a_py_dataset_epoch_by_epoch_in_keras_shuffled_order():
    data = Squares()
    history = small_model().fit(data, epochs=3, verbose=0)
    assert len(history.history["loss"]) == 3
    assert data.epochs_ended == 3
    passes = [data.read[1 + 4 * e : 5 + 4 * e] for e in range(3)]  # read[0]: the spec
    for epoch, seen in enumerate(passes):
        order = list(range(4))
        random.Random(epoch).shuffle(order)  # Keras's PyDatasetAdapter order
        assert seen == order


def test_fit_without_shuffle_equals_fit_on_the_same_batches_as_a_dataset():
    a, b = small_model(), small_model()
    a.fit(Squares(), epochs=2, shuffle=False, verbose=0)
    xs = [Squares()[i] for i in range(4)]
    ds = sl.data.Dataset.from_generator(
        lambda: iter(xs), (sl.float32, sl.float32), ([None, 1], [None, 1])
    )
    b.fit(ds, epochs=2, verbose=0)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_allclose(wa, wb, rtol=1e-6)


def test_evaluate_predict_and_validation_data_read_a_sequence():
    class Inputs(sl.utils.Sequence):  # Keras 2's name, an array per batch: (x,)
        def __len__(self):
            return 3

        def __getitem__(self, index):
            return np.full((2, 1), index, np.float32)

    model = small_model()
    np.testing.assert_allclose(model.predict(Inputs(), verbose=0).ravel(), [0, 0, 1, 1, 2, 2])
    loss = model.evaluate(Squares(), verbose=0)
    x = np.concatenate([Squares()[i][0] for i in range(4)])
    np.testing.assert_allclose(loss, np.mean((x - x**2) ** 2), rtol=1e-5)
    history = model.fit(Squares(), validation_data=Squares(), epochs=1, verbose=0)
    assert "val_loss" in history.history


def test_a_bad_batch_and_a_missing_super_init_are_reported():
    class Bad(sl.utils.PyDataset):
        def __len__(self):
            return 1

        def __getitem__(self, index):
            return (np.ones((1, 1)),) * 4

    with pytest.raises(ValueError, match="must return a tuple or a dict"):
        small_model().fit(Bad(), verbose=0)

    class NoSuper(sl.utils.PyDataset):
        def __init__(self):
            pass

    with pytest.warns(UserWarning, match=r"should call `super\(\).__init__"):
        assert NoSuper().workers == 1
