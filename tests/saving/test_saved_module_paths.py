"""Files name sluice's modules as they were before issue 26 moved the implementation into
sluice/_keras and sluice/_tf1: what is written does not change, and files written before load."""

import inspect
import json
import pathlib

import sluice as sl
from sluice._keras.layers import graph_op_layer, keras_operations
from sluice._keras.optimizers import optimizer as optimizer_lib
from sluice._keras.saving import serialization
from sluice._module_paths import saved_module
from sluice._tf1.cells import nest


def test_saved_module_drops_the_implementation_folder():
    assert saved_module("sluice._keras.layers.core.lambda_layer") == "sluice.layers.core"
    assert saved_module("sluice._tf1.optimizers.tf1") == "sluice.optimizers.tf1"
    assert saved_module("sluice.framework.ops.nn.nn_ops") == "sluice.framework.ops.nn.nn_ops"
    assert saved_module("my_project.layers") == "my_project.layers"


def test_optimizer_classes_keep_the_keys_saved_graphs_name():
    # an ApplyUpdates op in a graph_def written before the move names these
    classes = optimizer_lib._OPTIMIZER_CLASSES
    assert classes["sluice.optimizers.tf1.AdamOptimizer"] is sl.train.AdamOptimizer
    assert classes["sluice.optimizers.keras.Adam"] is sl.optimizers.Adam
    assert not [key for key in classes if "._keras." in key or "._tf1." in key]


def test_a_function_without_a_keras_path_is_saved_under_its_old_module():
    config = serialization.serialize_keras_object(nest.flatten)
    assert config["module"] == "sluice.cells.nest"
    assert config["config"] == "flatten"


def test_every_layer_keeps_the_module_files_name_it_under():
    # recorded before issue 26 regrouped sluice/_keras/layers by family (item 3): a class or
    # function without a Keras public path is saved under this module, wherever it lives now
    recorded = json.loads((pathlib.Path(__file__).parent / "saved_layer_modules.json").read_text())
    now = {"GraphOpLayer": saved_module(graph_op_layer.GraphOpLayer.__module__)}
    for key, cls in keras_operations.OPERATIONS.items():
        now[f"keras_operations.OPERATIONS[{key}]"] = saved_module(cls.__module__)
    for namespace in ("layers", "layers.activations", "layers.initializers", "layers.regularizers"):
        module = sl
        for part in namespace.split("."):
            module = getattr(module, part)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                now[f"sluice.{namespace}.{name}"] = saved_module(obj.__module__)
    assert {key: now.get(key) for key in recorded} == recorded  # new layers are new names
