"""Registry sweep (STYLE.md practice 2): every op is complete."""

import sluice  # noqa: F401  (registers every op)
from sluice.framework.ir import registry


def test_every_op_has_an_inference_rule_and_a_kernel():
    for name, op_def in registry.registered_ops().items():
        assert callable(op_def.infer), name
        assert op_def.kernel is not None or op_def.control_flow, f"{name} has no kernel"


def test_every_op_has_a_gradient_or_is_marked_not_differentiable():
    missing = [name for name in registry.registered_ops() if registry.get_gradient(name) is None]
    assert not missing, f"ops with neither a gradient nor a not_differentiable mark: {missing}"


def test_registering_an_op_twice_is_an_error():
    import pytest

    with pytest.raises(KeyError):
        registry.register_op("Identity", infer=lambda op: [], kernel=lambda x: x)
