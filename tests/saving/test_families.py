"""`get`, `serialize` and `deserialize` of the families of Keras objects found by name
(`sluice/_keras/saving/families.py`), swept over initializers, constraints, regularizers and
activations: each built-in by class name and snake_case name, config round trips, classes,
callables, registered objects and the errors, with Keras 3's messages."""

import pytest

import sluice as sl
from sluice._keras.saving import families

MODULES = {
    "initializers": sl.initializers,
    "constraints": sl.constraints,
    "regularizers": sl.regularizers,
}
FAMILIES = {
    "initializers": "Could not locate class 'no_such_thing'",
    "constraints": "Could not interpret constraint identifier: no_such_thing",
    "regularizers": "Could not interpret regularizer identifier: no_such_thing",
}


def _builtins(name):
    module = MODULES[name]
    return [getattr(module, cls.__name__) for cls in module.get.__globals__["FAMILY"].classes]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_builtin_by_name_and_config(name):
    module = MODULES[name]
    for cls in _builtins(name):
        if cls.__name__ in ("Initializer", "Constraint", "Regularizer"):
            continue
        assert type(module.get(cls.__name__)) is cls
        assert type(module.get(families.to_snake_case(cls.__name__))) is cls
        assert type(module.get(cls)) is cls  # a class: a new instance
        obj = cls()
        assert module.get(obj) is obj
        config = module.serialize(obj)
        assert config == {"module": f"keras.{name}", "class_name": cls.__name__,
                          "config": obj.get_config(), "registered_name": None}  # fmt: skip
        for again in (module.deserialize(config), module.get(config)):
            assert type(again) is cls and again.get_config() == obj.get_config()
        # the older form, without module
        old = {"class_name": cls.__name__, "config": obj.get_config()}
        assert type(module.deserialize(old)) is cls


@pytest.mark.parametrize("name", sorted(MODULES))
def test_unknown_names_and_bad_identifiers(name):
    module = MODULES[name]
    assert module.get(None) is None and module.serialize(None) is None
    with pytest.raises(ValueError, match=FAMILIES[name]) as err:
        module.get("no_such_thing")
    assert "Known names" in str(err.value)
    with pytest.raises(ValueError, match=r"Could not interpret \w+ identifier: 3"):
        module.get(3)
    with pytest.raises(ValueError, match="config must be a dict with a class_name"):
        module.deserialize({"config": {}})


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_function_and_a_registered_object(name):
    module = MODULES[name]

    def custom(*args, **kwargs):
        return None

    assert module.get(custom) is custom
    registered = sl.saving.register_keras_serializable(package="families_test")(custom)
    assert module.get("families_test>custom") is registered
    config = module.serialize(custom)
    assert config["registered_name"] == "families_test>custom"
    assert module.deserialize(config) is custom


def test_keras_names_and_aliases():
    assert type(sl.regularizers.get("l1l2")) is sl.regularizers.L1L2  # Keras's snake_case
    assert type(sl.regularizers.get("l1_l2")) is sl.regularizers.L1L2  # sl.regularizers.l1_l2
    assert type(sl.initializers.get("zero")) is sl.initializers.Zeros
    assert type(sl.initializers.get("OrthogonalInitializer")) is sl.initializers.Orthogonal
    old = {"module": "keras.initializers", "class_name": "OrthogonalInitializer",
           "config": {"gain": 2.0, "seed": None}, "registered_name": None}  # fmt: skip
    assert sl.initializers.deserialize(old).get_config()["gain"] == 2.0  # Keras's older name
    assert type(sl.constraints.get("min_max_norm")) is sl.constraints.MinMaxNorm
    assert families.to_snake_case("SimpleRNN") == "simple_rnn"
    assert families.to_snake_case("Conv2D") == "conv2d"


def test_activations_use_the_same_rules():
    A = sl.activations
    assert A.get(None) is A.linear and A.get("silu") is A.silu and A.get("swish") is A.silu

    class Scaled:  # a class is a callable: returned as it is, as Keras does
        def __call__(self, x):
            return x

    assert A.get(Scaled) is Scaled
    with pytest.raises(ValueError, match="Could not interpret activation function identifier"):
        A.get("no_such_thing")
    with pytest.raises(ValueError, match="Could not interpret activation function identifier"):
        A.get(3)
