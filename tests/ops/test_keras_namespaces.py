"""`sl.ops` has Keras 3's functions (keras/api/ops/__init__.py and its submodules numpy, nn,
linalg, image), each under the same objects in the submodules; what is still missing is this
list, so a name that disappears or a new one that lands without its entry here fails."""

import sluice as sl
from sluice._keras.ops import submodules

# Keras 3's top-level `keras.ops` names (besides the submodules' ones, which it also holds)
KERAS_OPS_NOT_HERE = {"fold", "istft", "jvp", "rearrange", "stft", "unfold"}
MISSING = {"numpy": set(), "nn": {"fold", "unfold"}, "linalg": {"jvp"}}


def test_every_submodule_function_is_the_top_level_one_or_listed_as_missing():
    for name, names in (("numpy", submodules.NUMPY), ("nn", submodules.NN),
                        ("linalg", submodules.LINALG)):  # fmt: skip
        namespace = getattr(sl.ops, name)
        absent = {n for n in names if not hasattr(namespace, n)}
        assert absent == MISSING[name], name
        for n in set(names) - absent:
            assert getattr(namespace, n) is getattr(sl.ops, n), (name, n)


def test_the_top_level_names_missing_are_the_listed_ones():
    every = set(submodules.NUMPY) | set(submodules.NN) | set(submodules.LINALG)
    absent = {n for n in every | KERAS_OPS_NOT_HERE if not hasattr(sl.ops, n)}
    assert absent == KERAS_OPS_NOT_HERE | MISSING["nn"] | MISSING["linalg"]
    assert sl.ops.image.resize is not None and sl.ops.numpy.sum is sl.ops.sum
