"""Host machinery: ops whose work runs on the host (print, py_func, queues, iterators,
summaries, strings), what they share (host callbacks, host queues) and the NumPy kernels of the
interpreted engine.
"""

from sluice.framework.ops.host import (  # noqa: F401  (imported for their registrations)
    host_callback,
    host_kernels,
    host_ops,
    host_queue,
    iterator_ops,
    print_ops,
    py_func_ops,
    queue_ops,
    string_kernels,
    string_ops,
    summary_ops,
)
