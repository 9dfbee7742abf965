"""The one contract stateful kernels see: both engines' contexts implement it."""

from sluice.framework.compiler.trace_context import TraceContext
from sluice.framework.ir.kernel_context import KernelContext
from sluice.framework.session import SessionState


def test_both_engines_give_kernels_a_kernel_context():
    assert isinstance(SessionState(), KernelContext)
    assert isinstance(TraceContext({}, {}), KernelContext)


def test_an_object_without_the_methods_is_not_one():
    class Partial:
        op = None

        def read_variable(self, handle):
            return None

    assert not isinstance(Partial(), KernelContext)
