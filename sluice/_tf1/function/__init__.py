"""TF1's graph functions: `function.Defun` (defun.py) and the functional ops that take
functions, `If`, `While`, `For`, `Gradient`, `partitioned_call`, `remote_call` and
`gen_functional_ops.case` (functional_ops.py)."""
