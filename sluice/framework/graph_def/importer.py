"""`import_graph_def`: builds the nodes of a GraphDef into a graph, treating the data as untrusted.

Every node is checked before it is built and every error names it: its fields and their types,
an op type that is not registered, attrs its kernel does not take or lacks, attrs of the wrong
type, inputs that name no node, two nodes of one name, an edge that goes back in the build order
other than a loop's back edge (Merge <- NextIteration), a cycle, outputs whose dtype or shape
differ from what the op's own inference rule says; then what spans nodes (`checks`): loop frames,
back edges, and ops whose run would touch a file or a Python object the file names. Nothing in
the data is ever evaluated, and no path it holds is opened.

Nodes are built as the file says, not through `Graph.create_op`: their inputs are already routed
through their contexts' Switches and Enters, so nothing is captured again, and every op gets the
context the file names.
"""

from __future__ import annotations

import inspect
import re
from typing import Any, NamedTuple

from sluice._export import export
from sluice.framework.graph_def import attr_codec, checks, contexts
from sluice.framework.graph_def.graph_def import FORMAT, VERSION, GraphDef, GraphDefError
from sluice.framework.ir import dtypes, registry
from sluice.framework.ir.device_spec import canonical_name
from sluice.framework.ir.graph import Graph, Operation, Tensor, get_default_graph
from sluice.framework.ops.host.host_callback import new_token

_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
_NODE_FIELDS = {
    "name",
    "op",
    "input",
    "device",
    "colocation",
    "gradient_op_type",
    "attr",
    "output",
    "context",
}
# Attrs whose type their name tells, checked on every op that has them.
_ATTR_TYPES: dict[str, type | tuple] = {
    **dict.fromkeys(("dtype", "T", "DstT", "SrcT", "out_type", "Tidx", "elem_dtype"), dtypes.DType),
    **dict.fromkeys(
        ("shape", "element_shape", "elem_shape"), (attr_codec.TensorShape, list, tuple, type(None))
    ),
    **dict.fromkeys(
        (
            "transpose_a",
            "transpose_b",
            "keep_dims",
            "validate_shape",
            "is_constant",
            "swap_memory",
            "dynamic_size",
            "Truncate",
        ),
        bool,
    ),
    **dict.fromkeys(("N", "num_split", "parallel_iterations", "seed", "seed2"), int),
    **dict.fromkeys(("frame_name", "data_format", "shared_name", "token"), str),
}
# Host callbacks name their Python function by a token of the process that built them.
_CALLBACK_OPS = ("PyFunc", "PyFuncStateless")
# Iterator ops name their dataset (a Python object) by such a token too.
_DATASET_TOKENS = {"IteratorGetNext": ("one_shot_dataset",), "MakeIterator": ("dataset",)}
_CUSTOM_GRADIENT = "CustomGradient-"  # the names `custom_gradient` registers its functions by


class Imported(NamedTuple):
    """What an import built: the ops by their names in the file, and the contexts."""

    ops: dict[str, Operation]
    contexts: list
    prefix: str

    def operation(self, name: Any) -> Operation:
        op = self.ops.get(name) if isinstance(name, str) else None
        if op is None:
            raise GraphDefError(f"{name!r} names no node of the graph_def.")
        return op

    def tensor(self, name: Any) -> Tensor:
        if not isinstance(name, str):
            raise GraphDefError(f"A tensor name is a string, got {name!r}.")
        op_name, _, index = name.rpartition(":")
        op = self.operation(op_name if op_name and index.isdigit() else name)
        if not (op_name and index.isdigit()) or int(index) >= len(op.outputs):
            raise GraphDefError(f"{name!r} names no tensor of the graph_def.")
        return op.outputs[int(index)]


@export("import_graph_def")
def import_graph_def(
    graph_def: GraphDef | dict | str | bytes,
    input_map: dict | None = None,
    return_elements: list[str] | None = None,
    name: str | None = None,
    op_dict: Any = None,
    producer_op_list: Any = None,
) -> list | None:
    """Builds a GraphDef into the default graph, under the name scope `name` (TF1 semantics).

    Args:
      graph_def: a GraphDef (or its JSON text or data).
      input_map: {tensor name in graph_def ("x:0", or "x" for "x:0"): Tensor of the default
        graph} to use in place of those tensors; the mapped ops are still imported.
      return_elements: names in graph_def of ops ("train") or tensors ("loss:0") to return.
      name: the prefix of the imported names (default "import"; "" for none).
      op_dict, producer_op_list: accepted for TF1 code; unused.

    Returns:
      The Operations and Tensors named by return_elements, in order; None without it.

    Raises:
      ValueError: the graph_def is malformed (the message names the node), a key of input_map
        or a return element names nothing in it, or a mapped tensor's dtype differs.

    >>> with sl.Graph().as_default() as g:
    ...     y = sl.multiply(sl.placeholder(sl.float32, [], name="x"), 3.0, name="y")
    >>> with sl.Graph().as_default():
    ...     (out,) = sl.import_graph_def(g.as_graph_def(), {"x:0": sl.constant(2.0)}, ["y:0"])
    ...     print(out.name, sl.Session().run(out))
    import/y:0 6.0
    """
    del op_dict, producer_op_list
    data = _as_data(graph_def)
    graph = get_default_graph()
    with graph.name_scope("import" if name is None else name) as scope:
        imported = build(graph, data, scope, input_map or {})
    if return_elements is None:
        return None
    out = []
    for element in return_elements:
        try:
            out.append(imported.tensor(element) if ":" in element else imported.operation(element))
        except GraphDefError:
            raise ValueError(
                f"Requested return_element {element!r} not found in graph_def."
            ) from None
    return out


def _as_data(graph_def: Any) -> dict:
    if isinstance(graph_def, GraphDef):
        return graph_def.as_dict()
    if isinstance(graph_def, (str, bytes, bytearray)):
        return GraphDef.from_json(graph_def).as_dict()
    if isinstance(graph_def, dict):
        return graph_def
    raise TypeError(f"import_graph_def takes a GraphDef, got {type(graph_def).__name__}.")


def build(graph: Graph, data: Any, prefix: str, input_map: dict) -> Imported:
    """Builds the nodes of graph_def data into `graph`, names prefixed by `prefix` ("" or
    "scope/"); checks everything first where it can and names the node at fault."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise GraphDefError(f"Not a sluice graph_def: the 'format' field is not {FORMAT!r}.")
    if set(data) != {"format", "version", "node", "contexts"}:
        raise GraphDefError(
            f"A graph_def has the fields format, version, node, contexts; got {sorted(data)}."
        )
    if data["version"] != VERSION:
        raise GraphDefError(
            f"graph_def version {data['version']!r} is not supported "
            f"(this sluice reads version {VERSION})."
        )
    nodes = data["node"]
    if not isinstance(nodes, list):
        raise GraphDefError("The graph_def's 'node' field is not a list.")
    if graph.finalized:
        raise RuntimeError("Graph is finalized and cannot be modified.")

    def rename(n: str) -> str:
        return prefix + n

    position = {}
    for i, node in enumerate(nodes):
        _check_node_fields(node, i)
        if node["name"] in position:
            raise GraphDefError(f"Node {node['name']!r}: the name is used by two nodes.")
        position[node["name"]] = i
        if _has_op(graph, rename(node["name"])):
            raise GraphDefError(
                f"Node {node['name']!r}: the graph already has an op named "
                f"{rename(node['name'])!r}; import under another name scope."
            )
    mapped = _check_input_map(input_map, position, nodes, graph)
    ctx_list = contexts.decode_structure(data["contexts"], graph, rename)
    ops: dict[str, Operation] = {}
    try:
        return _build_nodes(graph, nodes, position, mapped, ctx_list, ops, data, rename, prefix)
    except BaseException:
        graph.discard_built_ops(ops.values())  # a failed import leaves the graph as it was
        raise


def _build_nodes(
    graph: Graph,
    nodes: list,
    position: dict,
    mapped: dict,
    ctx_list: list,
    ops: dict[str, Operation],
    data: dict,
    rename: Any,
    prefix: str,
) -> Imported:
    pending_data: list[tuple[Operation, int, str]] = []
    pending_controls: list[tuple[Operation, str]] = []
    for node in nodes:
        where = f"Node {node['name']!r} ({node['op']})"
        inputs, back_edges, controls, later_controls = [], [], [], []
        for k, ref in enumerate(node["input"]):
            if ref.startswith("^"):
                source = ref[1:]
                _check_known(source, position, where)
                if source in ops:
                    controls.append(ops[source])
                else:  # a pivot or control token built after the op
                    later_controls.append(source)
                continue
            source, index = _split_tensor_name(ref, where)
            _check_known(source, position, where)
            if ref in mapped:
                inputs.append(mapped[ref])
            elif source in ops:
                op = ops[source]
                if index >= len(op.outputs):
                    raise GraphDefError(
                        f"{where}: input {ref!r} names output {index} of an op "
                        f"with {len(op.outputs)} outputs."
                    )
                inputs.append(op.outputs[index])
            else:
                back_edges.append((len(inputs), ref))
                inputs.append(None)
        if back_edges:
            stand_in = next((t for t in inputs if t is not None), None)
            for _, ref in back_edges:
                target = nodes[position[ref.split(":")[0]]]
                if node["op"] != "Merge" or target["op"] != "NextIteration" or stand_in is None:
                    raise GraphDefError(
                        f"{where}: input {ref!r} comes later in the graph_def; only a loop's "
                        "Merge may take its NextIteration's output that way."
                    )
            inputs = [stand_in if t is None else t for t in inputs]
        op = _build_node(graph, node, where, rename, inputs, controls, ctx_list, prefix)
        ops[node["name"]] = op
        pending_data += [(op, k, ref) for k, ref in back_edges]
        pending_controls += [(op, source) for source in later_controls]
    imported = Imported(ops, ctx_list, prefix)
    for op, k, ref in pending_data:
        checks.check_back_edge(op, imported.tensor(ref))
        op.update_input(k, imported.tensor(ref))
    for op, source in pending_controls:
        op.add_control_input(ops[source])
    _check_acyclic(list(ops.values()))
    try:
        contexts.decode_tensors(data["contexts"], ctx_list, imported.tensor, imported.operation)
    except (GraphDefError, contexts.ContextFormatError) as err:
        raise GraphDefError(f"In the graph_def's control-flow contexts: {err}") from None
    checks.check_frames(list(ops.values()))
    return imported


def _has_op(graph: Graph, name: str) -> bool:
    try:
        graph.get_operation_by_name(name)
    except KeyError:
        return False
    return True


def _check_node_fields(node: Any, i: int) -> None:
    if not isinstance(node, dict):
        raise GraphDefError(f"Node {i}: an object expected, got {type(node).__name__}.")
    name = node.get("name")
    where = f"Node {name!r}" if isinstance(name, str) else f"Node {i}"
    if set(node) != _NODE_FIELDS:
        raise GraphDefError(
            f"{where}: missing fields {sorted(_NODE_FIELDS - set(node))}, "
            f"unexpected fields {sorted(set(node) - _NODE_FIELDS)}."
        )
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > 1000:
        raise GraphDefError(f"{where}: {name!r} is not a valid op name.")
    if not isinstance(node["op"], str):
        raise GraphDefError(f"{where}: the op type is not a string.")
    try:
        registry.get_op_def(node["op"])
    except KeyError:
        raise GraphDefError(
            f"{where}: op type {node['op']!r} is not registered in this sluice."
        ) from None
    checks = [
        ("input", list, str),
        ("colocation", list, str),
        ("output", list, dict),
    ]
    for key, outer, inner in checks:
        if not isinstance(node[key], outer) or not all(isinstance(x, inner) for x in node[key]):
            raise GraphDefError(f"{where}: {key!r} must be a list of {inner.__name__}.")
    if not isinstance(node["device"], str):
        raise GraphDefError(f"{where}: 'device' must be a string.")
    if node["gradient_op_type"] is not None and not isinstance(node["gradient_op_type"], str):
        raise GraphDefError(f"{where}: 'gradient_op_type' must be null or a string.")
    if not isinstance(node["attr"], dict):
        raise GraphDefError(f"{where}: 'attr' must be an object.")
    ctx = node["context"]
    if ctx is not None and type(ctx) is not int:
        raise GraphDefError(f"{where}: 'context' must be null or an index.")


def _check_known(source: str, position: dict, where: str) -> None:
    if source not in position:
        raise GraphDefError(f"{where}: input {source!r} names no node of the graph_def.")


def _split_tensor_name(ref: str, where: str) -> tuple[str, int]:
    source, _, index = ref.rpartition(":")
    if not source or not index.isdigit() or len(index) > 6:
        raise GraphDefError(f"{where}: input {ref!r} is not 'op_name:index' or '^op_name'.")
    return source, int(index)


def _check_input_map(input_map: dict, position: dict, nodes: list, graph: Graph) -> dict:
    if not isinstance(input_map, dict):
        raise TypeError(f"input_map must be a dict, got {type(input_map).__name__}.")
    mapped, missing = {}, []
    for key, value in input_map.items():
        if not isinstance(key, str):
            raise TypeError(f"input_map keys are tensor names, got {key!r}.")
        name = key if ":" in key else f"{key}:0"
        source, _, index = name.rpartition(":")
        node = nodes[position[source]] if source in position else None
        if node is None or not index.isdigit() or int(index) >= len(node["output"]):
            missing.append(key)
            continue
        tensor = graph.as_graph_element(value)
        if not isinstance(tensor, Tensor):
            raise TypeError(f"input_map[{key!r}] must be a Tensor, got {value!r}.")
        want = node["output"][int(index)].get("dtype")
        if attr_codec.encode_dtype(tensor.dtype) != want:
            raise ValueError(
                f"Input {key!r} of the graph_def has dtype {want}, but input_map "
                f"gives {tensor.name} of dtype {tensor.dtype.name}."
            )
        mapped[name] = tensor
    if missing:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: {missing}")
    return mapped


def _decoded_attrs(node: dict, where: str, rename: Any, prefix: str) -> dict:
    attrs = {}
    for key, value in node["attr"].items():
        try:
            attrs[key] = attr_codec.decode(value)
        except attr_codec.AttrFormatError as err:
            raise GraphDefError(f"{where}: attr {key!r}: {err}.") from None
        kind = _ATTR_TYPES.get(key)
        if kind is not None and not isinstance(attrs[key], kind):
            names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else [kind]))
            raise GraphDefError(
                f"{where}: attr {key!r} must be a {names}, got {type(attrs[key]).__name__}."
            )
    if prefix:  # a second import of one graph must not share its loops' frames or variables
        for key in ("frame_name", "shared_name"):
            if key in attrs and attrs[key]:
                attrs[key] = rename(attrs[key])
    if "token" in attrs:  # process-local names of host callbacks
        token = attrs["token"]
        attrs["token"] = (
            f"{token}/imported"
            if node["op"] in _CALLBACK_OPS
            else new_token(token.rsplit("_", 1)[0])
        )
    for key in _DATASET_TOKENS.get(node["op"], ()):
        # a dataset is a Python object of the process that built it, named by a token: the
        # file's token could name a live dataset (a generator) of this process
        if attrs.get(key):
            attrs[key] = f"{attrs[key]}/imported"
    checks.check_host_effects(node["op"], attrs, where)
    return attrs


def _check_kernel_attrs(op_def: registry.OpDef, attrs: dict, where: str) -> None:
    if op_def.kernel is None:
        return
    try:
        params = inspect.signature(op_def.kernel).parameters.values()
    except (TypeError, ValueError):  # a builtin or C function: nothing to compare
        return
    keyword = {p.name for p in params if p.kind is p.KEYWORD_ONLY}
    required = {p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty}
    if required - set(attrs):
        raise GraphDefError(f"{where}: missing attrs {sorted(required - set(attrs))}.")
    if not any(p.kind is p.VAR_KEYWORD for p in params) and set(attrs) - keyword:
        raise GraphDefError(f"{where}: unexpected attrs {sorted(set(attrs) - keyword)}.")


def _build_node(
    graph: Graph,
    node: dict,
    where: str,
    rename: Any,
    inputs: list,
    controls: list,
    ctx_list: list,
    prefix: str,
) -> Operation:
    op_def = registry.get_op_def(node["op"])
    attrs = _decoded_attrs(node, where, rename, prefix)
    _check_kernel_attrs(op_def, attrs, where)
    ctx = node["context"]
    if ctx is not None and not 0 <= ctx < len(ctx_list):
        raise GraphDefError(f"{where}: context {ctx} is not listed.")
    try:
        outputs = [
            (attr_codec.decode_dtype(o.get("dtype")), attr_codec.decode_shape(o.get("shape")))
            for o in node["output"]
        ]
    except attr_codec.AttrFormatError as err:
        raise GraphDefError(f"{where}: output: {err}.") from None
    try:
        device = canonical_name(node["device"]) if node["device"] else ""
    except (ValueError, TypeError) as err:
        raise GraphDefError(f"{where}: device {node['device']!r}: {err}") from None
    colocation = []
    for group in node["colocation"]:
        if not group.startswith("loc:@"):
            raise GraphDefError(f"{where}: colocation groups look like 'loc:@name', got {group!r}.")
        colocation.append("loc:@" + rename(group[5:]))
    checks.check_file_inputs(node["op"], inputs, where)
    op = Operation(graph, op_def, rename(node["name"]), inputs, controls, attrs)
    op.control_flow_context = None if ctx is None else ctx_list[ctx]
    try:
        specs = op_def.infer(op)
    except (
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        ArithmeticError,
        RecursionError,
    ) as err:  # a chain of constants too deep to fold counts too
        seen = ", ".join(f"{t.name}: {t.dtype.name}{t.shape}" for t in inputs) or "no inputs"
        raise GraphDefError(f"{where} (inputs {seen}) does not fit its op type: {err}") from None
    if len(specs) != len(outputs):
        raise GraphDefError(
            f"{where}: the file lists {len(outputs)} outputs, the op type has {len(specs)}."
        )
    tensors = []
    for k, ((dtype, shape), (want_dtype, want_shape)) in enumerate(zip(specs, outputs)):
        shape = (
            attr_codec.TensorShape(shape)
            if not isinstance(shape, attr_codec.TensorShape)
            else shape
        )
        if dtype != want_dtype or not shape.is_compatible_with(want_shape):
            raise GraphDefError(
                f"{where}: output {k} is {want_dtype.name}{want_shape} in the file, but the op "
                f"computes {dtype.name}{shape} from its inputs and attrs."
            )
        tensors.append(Tensor(op, k, want_dtype, want_shape))
    gradient = node["gradient_op_type"]
    if gradient is not None and gradient.startswith(_CUSTOM_GRADIENT):
        # a custom_gradient's function is Python of the process that built it; its numbered
        # name could be another function here: differentiating the op now raises LookupError
        gradient = f"{gradient}/imported"
    graph.add_built_op(
        op, tensors, device=device, colocation=tuple(sorted(colocation)), gradient_op_type=gradient
    )
    return op


def _check_acyclic(ops: list[Operation]) -> None:
    """Raises unless the imported ops are acyclic once loop back edges are left out."""
    members = set(ops)
    waiting = {}
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        sources = [
            t.op for t in op.inputs if not (op.type == "Merge" and t.op.type == "NextIteration")
        ]
        sources += list(op.control_inputs)
        sources = [s for s in sources if s in members]
        waiting[op] = len(sources)
        for s in sources:
            users[s].append(op)
    ready = [op for op in ops if waiting[op] == 0]
    done = 0
    while ready:
        op = ready.pop()
        done += 1
        for user in users[op]:
            waiting[user] -= 1
            if waiting[user] == 0:
                ready.append(user)
    if done != len(ops):
        stuck = sorted(op.name for op in ops if waiting[op] > 0)[:5]
        raise GraphDefError(
            f"The graph_def has a cycle that is not a loop's back edge, through {stuck}."
        )
