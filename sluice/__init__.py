"""sluice: a Keras-style training framework on a TensorFlow-1.x-style dataflow graph.

`import sluice as sl`, then write TF1 graph code with `sl.` in place of `tf.`.
"""

from sluice import debugging, nn, optimizers, train
from sluice.cells import (
    constant_initializer,
    get_variable,
    get_variable_scope,
    glorot_uniform_initializer,
    ones_initializer,
    random_uniform_initializer,
    variable_scope,
    zeros_initializer,
)
from sluice.framework.ir import errors
from sluice.framework.control_flow.cond import cond
from sluice.framework.ir.dtypes import (
    bfloat16,
    bool_ as bool,
    complex64,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    as_dtype,
)
from sluice.framework.autodiff.gradients import gradients
from sluice.framework.ir.graph import (
    Graph,
    GraphKeys,
    Operation,
    Tensor,
    add_to_collection,
    control_dependencies,
    device,
    get_collection,
    get_collection_ref,
    get_default_graph,
    name_scope,
    reset_default_graph,
    set_random_seed,
)
from sluice.framework.ops.array_ops import (
    boolean_mask,
    broadcast_to,
    expand_dims,
    reshape,
    reverse,
    squeeze,
    tile,
    transpose,
)
from sluice.framework.ops.debug_ops import add_check_numerics_ops, check_numerics
from sluice.framework.ops.fill_ops import (
    cast,
    fill,
    one_hot,
    ones,
    ones_like,
    range,
    rank,
    shape,
    size,
    to_double,
    to_float,
    to_int32,
    to_int64,
    zeros,
    zeros_like,
)
from sluice.framework.ops.join_ops import concat, pad, split, stack, unstack
from sluice.framework.ops.math_ops import (
    add,
    add_n,
    div,
    divide,
    equal,
    floordiv,
    floormod,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    not_equal,
    pow,
    realdiv,
    squared_difference,
    sub,
    subtract,
    truediv,
)
from sluice.framework.ops.matmul_ops import matmul
from sluice.framework.ops.nn_ops import softmax
from sluice.framework.ops.random_ops import (
    multinomial,
    random_normal,
    random_shuffle,
    random_uniform,
    truncated_normal,
)
from sluice.framework.ops.reduction_ops import (
    argmax,
    argmin,
    cumsum,
    reduce_all,
    reduce_any,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
)
from sluice.framework.ops.gather_ops import gather, where, where_v2
from sluice.framework.ops.slicing_ops import slice, strided_slice
from sluice.framework.ops.unary_ops import (
    abs,
    ceil,
    conj,
    cos,
    erf,
    exp,
    expm1,
    floor,
    log,
    log1p,
    negative,
    reciprocal,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    tan,
    tanh,
)
from sluice.framework.ops.core_ops import (
    constant,
    convert_to_tensor,
    group,
    identity,
    no_op,
    placeholder,
    placeholder_with_default,
    stop_gradient,
    tuple_ as tuple,
)
from sluice.framework.session import (
    InteractiveSession,
    RunMetadata,
    Session,
    SessionConfig,
)
from sluice.framework.ir.default_session import get_default_session
from sluice.framework.ir.tensor_shape import TensorShape
from sluice.framework.variables import (
    Variable,
    global_variables,
    global_variables_initializer,
    is_variable_initialized,
    local_variables,
    local_variables_initializer,
    trainable_variables,
    variables_initializer,
)
from sluice.framework.control_flow.while_loop import while_loop
from sluice.optimizers.training_util import clip_by_global_norm, global_norm
from sluice import callbacks, layers, losses, metrics, utils
from sluice.layers.input_layer import Input
from sluice.models import Model, Sequential

__version__ = "0.1.0"

# Every public name imported above (several shadow Python builtins on purpose, as in TF1:
# sl.range, sl.abs, sl.bool, ...).
__all__ = sorted(name for name in dir() if not name.startswith("_"))
