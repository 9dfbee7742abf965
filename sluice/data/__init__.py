"""`sl.data`: TF1.15's `tf.data` for the common input pipeline (see `dataset` and `iterators`).

Elements are made on the host by the iterator a session runs, one step ahead, and fed to each
step that fetches `get_next()`'s tensors.
"""

# the modules of the dataset kinds register them with `Dataset` (see `dataset.dataset_kind`)
from sluice._tf1.data import batching, sources, transformations  # noqa: F401
from sluice._tf1.data.dataset import Dataset
from sluice._tf1.data.iterators import (
    Iterator,
    get_output_classes,
    get_output_shapes,
    get_output_types,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from sluice.data import experimental

__all__ = [
    "Dataset",
    "Iterator",
    "experimental",
    "get_output_classes",
    "get_output_shapes",
    "get_output_types",
    "make_initializable_iterator",
    "make_one_shot_iterator",
]
