"""The graph IR: Graph, Operation, Tensor, the op registry, dtypes, shapes and errors."""
