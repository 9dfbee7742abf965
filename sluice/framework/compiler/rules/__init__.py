"""Lowering rules of the compiled engine, one module per family, registered in the op registry.

An op is lowered by calling its kernel on traced values (`Lowering.eval_op`'s default), unless
its type has a rule (`registry.register_lowering`, as JAX's `mlir.register_lowering(prim, rule)`
beside a primitive). A rule gets an `OpContext` (`context`) and returns one (value, liveness) pair
per output. The rules live here, not beside the ops in `framework/ops`, because they use the
compiler's liveness flags and buffers, and ops never import the compiler:

  control_flow  Switch, Merge; Enter, Exit, NextIteration and LoopCond, which their while loop
                lowers as a whole (`Lowering.run_loop`)
  stacks        StackV2, StackPushV2, StackPopV2: pushes become the loop's per-iteration outputs,
                pops read the saved buffer
  static        Const, Shape, Size, Rank: values known while tracing

`lowering` imports every family, so the table is full before any step is traced.
"""
