"""`sl.utils.plot_model` / `model_to_dot`: the DOT graph of a model's layers (nodes, edges,
shapes); DOT files without pydot; a clear ImportError for rendered formats without it."""

import re
import shutil
import sys

import pytest

import sluice as sl
from sluice import utils


def nodes_and_edges(source):
    nodes = dict(re.findall(r'^\s*"([^"]+)" \[label="([^"]*)"\];$', source, re.M))
    edges = set(re.findall(r'^\s*"([^"]+)" -> "([^"]+)";$', source, re.M))
    return nodes, edges


@pytest.fixture(scope="module")
def functional():
    """Two inputs, a shared layer, a merge, two outputs."""
    left, right = sl.Input((3,), name="left"), sl.Input((5,), name="right")
    a = sl.layers.Dense(4, activation="relu", name="a")(left)
    b = sl.layers.Dense(4, name="b")(right)
    shared = sl.layers.Dense(4, name="shared")
    merged = sl.layers.Concatenate(name="merged")([shared(a), shared(b)])
    score = sl.layers.Dense(1, activation="sigmoid", name="score")(merged)
    return sl.Model([left, right], [score, a])


def test_sequential_nodes_edges_and_shapes():
    model = sl.Sequential(
        [sl.Input((3,)), sl.layers.Dense(4, name="hidden"), sl.layers.Dense(2, name="out")]
    )
    nodes, edges = nodes_and_edges(utils.model_to_dot_source(model, show_shapes=True))
    assert nodes == {
        "hidden": r"hidden (Dense)\nInput shape: (None, 3)\nOutput shape: (None, 4)",
        "out": r"out (Dense)\nInput shape: (None, 4)\nOutput shape: (None, 2)",
    }
    assert edges == {("hidden", "out")}
    plain, _ = nodes_and_edges(utils.model_to_dot_source(model, show_layer_names=False))
    assert plain == {"hidden": "Dense", "out": "Dense"}


def test_functional_multi_input_output_and_shared_layers(functional):
    source = utils.model_to_dot_source(
        functional, show_shapes=True, show_dtype=True, show_layer_activations=True, rankdir="LR"
    )
    nodes, edges = nodes_and_edges(source)
    assert set(nodes) == {"left", "right", "a", "b", "shared", "merged", "score"}
    assert edges == {
        ("left", "a"),
        ("right", "b"),
        ("a", "shared"),
        ("b", "shared"),
        ("shared", "merged"),
        ("merged", "score"),
    }
    assert nodes["merged"] == (
        r"merged (Concatenate)\ndtype: float32"
        r"\nInput shape: [(None, 4), (None, 4)]\nOutput shape: (None, 8)"
    )
    assert r"Activation: sigmoid" in nodes["score"] and r"Activation: relu" in nodes["a"]
    assert 'rankdir="LR"' in source


def test_expand_nested_draws_the_inner_layers_in_a_cluster():
    inner = sl.Sequential(
        [sl.layers.Dense(3, name="i1"), sl.layers.Dense(2, name="i2")], name="inner"
    )
    x = sl.Input((4,), name="x")
    model = sl.Model(x, sl.layers.Dense(1, name="head")(inner(x)))
    _, edges = nodes_and_edges(utils.model_to_dot_source(model))
    assert edges == {("x", "inner"), ("inner", "head")}
    source = utils.model_to_dot_source(model, expand_nested=True)
    nodes, edges = nodes_and_edges(source)
    assert 'subgraph "cluster_inner"' in source and set(nodes) == {
        "x",
        "inner/i1",
        "inner/i2",
        "head",
    }
    assert edges == {("x", "inner/i1"), ("inner/i1", "inner/i2"), ("inner/i2", "head")}


def test_dot_files_need_no_pydot(functional, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pydot", None)  # as if not installed
    sl.utils.plot_model(functional, to_file=str(tmp_path / "model.dot"), show_shapes=True)
    assert (tmp_path / "model.dot").read_text() == utils.model_to_dot_source(
        functional, show_shapes=True
    )
    with pytest.raises(ImportError, match=r"pip install pydot.*graphviz"):
        sl.utils.plot_model(functional, to_file=str(tmp_path / "model.png"))
    with pytest.raises(ImportError, match="model_to_dot_source"):
        sl.utils.model_to_dot(functional)


# pydot's parser calls pyparsing names that pyparsing 3.3 deprecates
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_rendered_formats_need_graphviz(functional, tmp_path, monkeypatch):
    pytest.importorskip("pydot")
    assert sl.utils.model_to_dot(functional).get_node('"shared"')
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ImportError, match="Graphviz's `dot`"):
        sl.utils.plot_model(functional, to_file=str(tmp_path / "model.svg"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_png_is_rendered_when_graphviz_is_there(functional, tmp_path):
    pytest.importorskip("pydot")
    sl.utils.plot_model(functional, to_file=str(tmp_path / "model.png"), dpi=50)
    assert (tmp_path / "model.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unbuilt_models_and_bad_rankdir_are_refused(functional):
    with pytest.raises(ValueError, match="not been built"):
        utils.model_to_dot_source(sl.Sequential([sl.layers.Dense(2)]))
    with pytest.raises(ValueError, match="rankdir"):
        utils.model_to_dot_source(functional, rankdir="sideways")
