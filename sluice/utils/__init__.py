"""`sl.utils`: Keras's utilities: `set_random_seed`, `to_categorical`, `pad_sequences`,
`plot_model` (with `model_to_dot`).

>>> sl.utils.set_random_seed(42)      # Python, NumPy, and the graph seed of new models
>>> first = np.random.rand(3)
>>> sl.utils.set_random_seed(42)
>>> bool(np.all(np.random.rand(3) == first))
True
>>> sl.utils.to_categorical([2, 0], num_classes=3)
array([[0., 0., 1.],
       [1., 0., 0.]], dtype=float32)
"""

from sluice._keras.utils.model_plot import model_to_dot, model_to_dot_source, plot_model
from sluice._keras.utils.numerical_utils import to_categorical
from sluice._keras.utils.rng_utils import get_random_seed, set_random_seed
from sluice._keras.utils.sequence_utils import pad_sequences

__all__ = [
    "get_random_seed", "model_to_dot", "model_to_dot_source", "pad_sequences", "plot_model",
    "set_random_seed", "to_categorical",
]  # fmt: skip
