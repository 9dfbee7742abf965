"""The compiled engine: a pruned graph lowered to one jax.jit function."""
