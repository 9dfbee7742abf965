"""The whitepaper's control-flow primitives (Switch, Merge, Enter, Exit, NextIteration,
LoopCond) and assertions (Assert, TF1's `assert_*`).
"""

from sluice.framework.ops.control import (  # noqa: F401  (imported for their registrations)
    assert_ops,
    control_flow_ops,
)
