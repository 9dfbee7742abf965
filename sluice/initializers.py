"""`sl.initializers`: TF1's `tf.initializers` namespace (`tf.compat.v1.initializers`).

Re-exports only: the TF1 initializer classes under their short names, and the variable
initializer ops TF1 also keeps here (`global_variables()`, `local_variables()`, `variables()`).
"""

from sluice._tf1.cells import initializers as _tf1
from sluice.framework import variables as _variables

constant = _tf1.constant_initializer
glorot_normal = _tf1.glorot_normal_initializer
glorot_uniform = _tf1.glorot_uniform_initializer
he_normal = _tf1.he_normal
he_uniform = _tf1.he_uniform
identity = _tf1.identity_initializer
lecun_normal = _tf1.lecun_normal
lecun_uniform = _tf1.lecun_uniform
ones = _tf1.ones_initializer
orthogonal = _tf1.orthogonal_initializer
random_normal = _tf1.random_normal_initializer
random_uniform = _tf1.random_uniform_initializer
truncated_normal = _tf1.truncated_normal_initializer
uniform_unit_scaling = _tf1.uniform_unit_scaling_initializer
variance_scaling = _tf1.variance_scaling_initializer
zeros = _tf1.zeros_initializer

global_variables = _variables.global_variables_initializer
local_variables = _variables.local_variables_initializer
variables = _variables.variables_initializer

__all__ = [
    "constant",
    "global_variables",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "identity",
    "lecun_normal",
    "lecun_uniform",
    "local_variables",
    "ones",
    "orthogonal",
    "random_normal",
    "random_uniform",
    "truncated_normal",
    "uniform_unit_scaling",
    "variables",
    "variance_scaling",
    "zeros",
]
