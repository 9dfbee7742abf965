"""Builds sluice's public namespaces (`sl`, `sl.nn`, `sl.train`, `sl.layers`, ...) from the
`@export` declarations (sluice/_export.py), when `sluice` is imported.

Every implementation module is imported first (in sorted order; each declares its own names),
then each namespace is made from the paths declared under it: a module object whose `__all__`
is exactly its names, registered in `sys.modules` so `import sluice.nn` and
`from sluice.layers import Dense` work as before. Nothing here lists a public name: a name
exists because the code that defines it says so.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import pkgutil
import sys
import types
from typing import Any

from sluice import _export

# The folders of implementation: the engine, the Keras API, TF1's namespaces.
IMPLEMENTATION = ("sluice.framework", "sluice._keras", "sluice._tf1")

# Namespaces that are another namespace under a second path, as in TF1
# (`tf.compat.v1 is tf`, `tf.flags is tf.app.flags`, `tf.io.gfile is tf.gfile`).
ALIASES = {
    "compat.v1": "",
    "flags": "app.flags",
    "io.gfile": "gfile",
    "cells": "nn.rnn_cell",
    # `tf.keras` in TF 1.x and 2.x: sluice's Keras names are its top-level names, so
    # `from tensorflow.keras.layers import Dense` runs with only `tensorflow` renamed
    "keras": "",
    # TF1's sparse_ops module holds gen_sparse_ops (`sparse_ops.gen_sparse_ops.sparse_softmax`)
    "python.ops.sparse_ops.gen_sparse_ops": "python.ops.gen_sparse_ops",
}

DOCS = {
    "": "sluice: a Keras-style training framework on a TensorFlow-1.x-style dataflow graph.",
    "activations": "Keras's `keras.activations`: relu, gelu, ..., get, serialize, deserialize.",
    "app": "TF1's `tf.app`: `run(main)` after parsing `tf.flags`.",
    "app.flags": "TF1's `tf.flags` (also `sl.flags`): command-line flags.",
    "applications": "Keras applications: VGG16, VGG19 with Keras's names and weight files.",
    "applications.vgg16": "`keras.applications.vgg16`.",
    "applications.vgg19": "`keras.applications.vgg19`.",
    "callbacks": "Keras callbacks: History, ModelCheckpoint, BackupAndRestore, EarlyStopping, ...",
    "checkpoints": "Checkpoints: Saver, its h5 files and state file, checkpoint readers.",
    "client": "TF1's `tf.client`.",
    "client.timeline": "TF1's `tf.client.timeline`: Chrome traces of a run's step stats.",
    "compat": "TF1's `tf.compat`.",
    "compat.v1": "TF1's `tf.compat.v1`: sluice itself.",
    "keras": "TensorFlow's `tf.keras`: sluice itself.",
    "backend": "Keras's `keras.backend`: floatx, epsilon, clear_session, dtypes, get_uid, ...",
    "constraints": "Keras's `keras.constraints`: MaxNorm, MinMaxNorm, NonNeg, UnitNorm, get, ...",
    "config": "Keras's `keras.config`: floatx, epsilon, image_data_format, logging, policies.",
    "contrib": "The parts of TF1's `tf.contrib` that TF1 programs use most.",
    "contrib.layers": "TF1's `tf.contrib.layers`: fully_connected, conv2d, flatten, batch_norm, "
    "layer_norm, embed_sequence, xavier_initializer, variance_scaling_initializer, l2_regularizer.",
    "contrib.framework": "TF1's `tf.contrib.framework`: arg_scope, add_arg_scope.",
    "contrib.legacy_seq2seq": "TF1's `tf.contrib.legacy_seq2seq`.",
    "contrib.rnn": "TF1's `tf.contrib.rnn`: the RNN cells under their contrib names.",
    "contrib.seq2seq": "TF1's `tf.contrib.seq2seq`.",
    "data": "TF1's `tf.data`: Datasets and iterators.",
    "data.experimental": "TF1's `tf.data.experimental`.",
    "datasets": "Keras's datasets, from the Keras cache.",
    **{
        f"datasets.{name}": f"Keras's `keras.datasets.{name}`: load_data()."
        for name in ("boston_housing", "cifar10", "cifar100", "fashion_mnist", "mnist")
    },
    "datasets.reuters": "Keras's `keras.datasets.reuters`: load_data(), get_word_index().",
    "datasets.imdb": "Keras's `keras.datasets.imdb`: load_data(), get_word_index().",
    "debugging": "TF1's `tf.debugging`: assertions and numeric checks.",
    "distribution": "Keras's `keras.distribution` on JAX meshes and jax.distributed.",
    "dtype_policies": "Keras's `keras.dtype_policies`: DTypePolicy, get.",
    "python": "TF1's `tensorflow.python` modules that TF1 programs import directly.",
    "python.client": "TF1's `tensorflow.python.client`.",
    "python.client.device_lib": "TF1's `device_lib`: list_local_devices().",
    "python.ops": "TF1's `tensorflow.python.ops`.",
    "python.framework": "TF1's `tensorflow.python.framework`.",
    "core": "TF's `tensorflow.core` protocol buffers that TF1 code imports (from tensorboardX).",
    "core.framework": "TF's `tensorflow.core.framework` protocol buffers.",
    "core.framework.attr_value_pb2": "TF's `attr_value_pb2`: AttrValue (loaded from "
    "tensorboardX when first used).",
    "python.framework.function": "TF1's `function` module: Defun (graph functions, inlined at "
    "each call).",
    "python.ops.functional_ops": "TF1's functional ops on Defuns: If, While, For, Gradient, "
    "partitioned_call, remote_call.",
    "python.ops.array_ops": "TF1's `array_ops` module: prevent_gradient.",
    "python.ops.math_ops": "TF1's `math_ops` module: _as_indexed_slices.",
    "python.ops.gradients_impl": "TF1's `gradients_impl` module: _hessian_vector_product.",
    "python.ops.gen_functional_ops": "TF1's raw functional ops: symbolic_gradient, case.",
    "python.framework.tensor_shape": "TF1's `tensor_shape`: TensorShape, as_shape, unknown_shape, "
    "scalar, dimension_value.",
    "python.ops.control_flow_ops": "TF1's `control_flow_ops` module: with_dependencies, switch, "
    "merge, exit, enter, next_iteration, loop_cond.",
    "python.ops.embedding_ops": "TF1's `embedding_ops` module: safe_embedding_lookup_sparse_v2.",
    "python.ops.custom_gradient": "TF1's `custom_gradient` module: get_dependent_variables, "
    "grad_pass_through, recompute_grad.",
    "python.ops.gen_control_flow_ops": "TF1's raw control-flow primitives: enter, exit, "
    "switch, merge, next_iteration, loop_cond (and the ref_ forms).",
    "python.ops.gen_data_flow_ops": "TF1's raw data-flow ops: tensor_array_read_v3, "
    "tensor_array_grad_with_shape.",
    "python.ops.gen_sparse_ops": "TF1's raw sparse ops on the three tensors of a sparse "
    "operand: sparse_reduce_sum/max(_sparse), sparse_softmax, sparse_dense_cwise_mul/div/add.",
    "python.ops.sparse_ops": "TF1's `sparse_ops` module: sparse_dense_cwise_add, gen_sparse_ops.",
    "python.ops.variable_scope": "TF1's `variable_scope` module: EagerVariableStore.",
    "python.ops.gen_resource_variable_ops": "TF1's raw resource-variable ops on a handle: "
    "assign_variable_op, assign_add/sub_variable_op, read_variable_op.",
    "python.ops.resource_variable_ops": "TF1's `resource_variable_ops` module: its raw ops on a "
    "handle (assign_variable_op, read_variable_op, ...).",
    "python.ops.tensor_array_grad": "TF1's TensorArray gradient helpers: _GetGradSource.",
    "dtypes": "TF1's `tf.dtypes`: DType objects (float32, int32, ...) and as_dtype.",
    "estimator": "TF1's `tf.estimator`: Estimator, EstimatorSpec, ModeKeys, RunConfig, "
    "WarmStartSettings, train_and_evaluate with TrainSpec and EvalSpec, and the hooks of "
    "`sl.train`.",
    "estimator.inputs": "TF1's `tf.estimator.inputs`: numpy_input_fn.",
    "errors": "TF1's `tf.errors`: the errors a run raises.",
    "gfile": "TF1's `tf.gfile` (also `sl.io.gfile`): files and folders.",
    "image": "TF1's `tf.image`.",
    "initializers": "TF1's `tf.initializers` (lower case) and Keras's `keras.initializers` "
    "(GlorotUniform, ..., get, serialize, deserialize).",
    "io": "TF1's `tf.io`.",
    "layers": "Keras layers (`sl.layers.Dense`) and TF1's functional layers (`sl.layers.dense`).",
    "layers.activations": "Keras activation functions.",
    "layers.initializers": "Keras initializers.",
    "layers.regularizers": "Keras regularizers.",
    "linalg": "TF1's `tf.linalg`.",
    "logging": "TF1's `tf.logging`.",
    "losses": "Keras losses and TF1's `tf.losses`.",
    "math": "TF1's `tf.math`.",
    "metrics": "Keras metrics and TF1's `tf.metrics`.",
    "mixed_precision": "Keras's `keras.mixed_precision`: DTypePolicy (Policy), "
    "set_global_policy, global_policy.",
    "models": "Keras models: Model, Sequential, load_model, clone_model.",
    "nest": "TF's `tf.nest`: nested structures by TF's rules.",
    "nn": "Neural-network ops (TF1's `tf.nn`).",
    "nn.rnn_cell": "TF1's RNN cells (`tf.nn.rnn_cell`; also `sl.cells`).",
    "ops": "Keras-style ops (`keras.ops`) on sluice tensors.",
    "ops.image": "`keras.ops.image`: image functions (resize, crop_images, pad_images, ...).",
    "ops.linalg": "`keras.ops.linalg`: linear algebra (solve, inv, svd, qr, cholesky, ...).",
    "ops.nn": "`keras.ops.nn`: activations, convolutions, pooling, attention, CTC, ...",
    "ops.numpy": "`keras.ops.numpy`: the NumPy-style functions of `sl.ops`.",
    "optimizers": "Keras optimizers over optax.",
    "optimizers.schedules": "Keras's learning-rate schedules (`keras.optimizers.schedules`).",
    "random": "TF1's `tf.random` and Keras's `keras.random` (SeedGenerator, randint, ...).",
    "regularizers": "Keras's `keras.regularizers`: L1, L2, L1L2, OrthogonalRegularizer, get, ...",
    "saving": "Keras saving: `.keras` files, weight files, the serialization registry.",
    "sparse": "TF1's `tf.sparse`: SparseTensor and the ops on sparse tensors.",
    "strings": "TF1's `tf.strings`: join, reduce_join, as_string, to_number, length.",
    "summary": "TF1's `tf.summary`: summaries for TensorBoard and the writer of event files.",
    "train": "Training: optimizers, Saver, hooks and sessions (TF1's `tf.train`).",
    "tree": "Keras's `keras.tree`: nested structures by Keras 3's rules.",
    "utils": "Keras utilities: set_random_seed, to_categorical, pad_sequences, plot_model.",
}


def import_implementation() -> None:
    """Imports every implementation module, so that every declaration has run."""
    for package_name in IMPLEMENTATION:
        package = importlib.import_module(package_name)
        walk = pkgutil.walk_packages(package.__path__, prefix=package_name + ".")
        for info in sorted(walk, key=lambda info: info.name):
            importlib.import_module(info.name)


class _Builder:
    """Namespaces under construction: each path's module object and its members."""

    def __init__(self, root: types.ModuleType):
        self.root = root
        self.modules: dict[str, types.ModuleType] = {"": root}
        self.members: dict[str, dict[str, Any]] = {"": {}}

    def namespace(self, path: str) -> types.ModuleType:
        """The namespace at `path`, made (and held by its parent) the first time it is asked."""
        if path not in self.modules:
            module = types.ModuleType(f"{self.root.__name__}.{path}", DOCS.get(path))
            self.modules[path] = module
            self.members.setdefault(path, {})
            sys.modules[module.__name__] = module
            parent, _, name = path.rpartition(".")
            self.add(parent, name, module)
        return self.modules[path]

    def add(self, namespace: str, name: str, value: Any) -> None:
        self.namespace(namespace)
        held = self.members[namespace].setdefault(name, value)
        if held is not value:  # e.g. a declared function and a namespace of the same path
            where = f"{namespace}.{name}" if namespace else name
            raise ValueError(f"sluice.{where} names two things: {held!r} and {value!r}")

    def finish(self) -> None:
        for path, names in self.members.items():
            module = self.modules[path]
            lazy = {n: v for n, v in names.items() if isinstance(v, _export.Lazy)}
            for name, value in names.items():
                if name not in lazy:
                    setattr(module, name, value)
            module.__all__ = sorted(n for n in names if not n.startswith("_"))  # TF1's _Names
            if lazy:
                _load_on_first_use(module, lazy)


def _load_on_first_use(module: types.ModuleType, lazy: dict[str, _export.Lazy]) -> None:
    """Gives `module` the names in `lazy`, each loaded when looked up."""

    def __getattr__(name: str) -> Any:
        if name not in lazy:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        return lazy[name].load()  # each time: it says what to install while that is missing

    def __dir__() -> list[str]:
        return sorted(set(vars(module)) | set(lazy))

    module.__getattr__ = __getattr__
    module.__dir__ = __dir__


def build(root_name: str) -> None:
    """Fills the package `root_name` (`sluice`) and its namespaces from the declarations."""
    root = sys.modules[root_name]
    import_implementation()
    builder = _Builder(root)
    for path, value in _export.declared().items():
        namespace, _, name = path.rpartition(".")
        builder.add(namespace, name, value)
    for path, target in ALIASES.items():
        value = builder.namespace(target) if target else root
        parent, _, name = path.rpartition(".")
        builder.add(parent, name, value)
        sys.modules[f"{root.__name__}.{path}"] = value
    builder.add("", "framework", importlib.import_module("sluice.framework"))
    _install_commands(root.__name__, builder)
    builder.finish()
    _register_under_root_aliases(root.__name__, builder)
    # the public test helpers are written against the namespaces, so they come last
    builder.add("", "testing", importlib.import_module("sluice.testing"))
    builder.finish()


def _register_under_root_aliases(root_name: str, builder: _Builder) -> None:
    """Makes `import sluice.keras.layers` (and `sluice.compat.v1.nn`) find the namespace that
    `sluice.layers` is: an alias of the root holds every namespace under its own path too."""
    root_aliases = [path for path, target in ALIASES.items() if not target]
    for alias in root_aliases:
        for path, module in list(builder.modules.items()):
            if path and not any(path == a or path.startswith(a + ".") for a in root_aliases):
                sys.modules.setdefault(f"{root_name}.{alias}.{path}", module)


class _CommandFinder(importlib.abc.MetaPathFinder):
    """Finds `sluice.distribution.launch` (a declared command) for `python -m`: a spec of the
    implementation's file under the public name, so runpy runs it as `__main__`."""

    def __init__(self, files: dict[str, str]):
        self.files = files  # public module name -> the file of the module it runs

    def find_spec(self, fullname: str, path: Any = None, target: Any = None):
        file = self.files.get(fullname)
        return importlib.util.spec_from_file_location(fullname, file) if file else None


def _install_commands(root_name: str, builder: _Builder) -> None:
    files = {}
    for path, module_name in _export.commands().items():
        files[f"{root_name}.{path}"] = importlib.util.find_spec(module_name).origin
        # a namespace holding a command answers `__path__`, so the import system asks the finder
        builder.namespace(path.rpartition(".")[0]).__path__ = []
    if files and not any(isinstance(f, _CommandFinder) for f in sys.meta_path):
        sys.meta_path.append(_CommandFinder(files))
