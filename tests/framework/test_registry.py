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


def test_every_lowering_rule_is_for_a_registered_op_and_every_op_can_be_lowered():
    from sluice.framework.compiler import lowering  # noqa: F401  (registers the lowering rules)

    ops = registry.registered_ops()
    rules = registry.registered_lowerings()
    assert set(rules) <= set(ops), f"rules for unknown ops: {sorted(set(rules) - set(ops))}"
    # an op with no kernel is lowered by its rule (the control-flow primitives)
    missing = [name for name, d in ops.items() if d.kernel is None and name not in rules]
    assert not missing, f"ops with neither a kernel nor a lowering rule: {missing}"


def test_registering_a_lowering_twice_is_an_error():
    import pytest

    from sluice.framework.compiler import lowering  # noqa: F401  (registers the lowering rules)

    with pytest.raises(KeyError):
        registry.register_lowering("Switch", lambda ctx: [])
