"""What the interpreted engine runs: a Plan of nodes, each a record precomputed for dispatch.

`Plan(pruned)` takes the ops a run needs (`prune`) and resolves every edge to a node reference, so
the executor's inner loop does no graph lookups. A node (`PlanNode`, see `plan_node`) is one op;
a `FusedGroup` is a convex region of pure ops in one frame that the executor runs as one call
(see `fusion`), as TensorFlow runs a loop body as one compiled call. Both carry the same
dispatch record:

    kind         which of the whitepaper's rules runs it (NORMAL, SWITCH, ..., GROUP)
    arrival      how its input tokens are collected (IMMEDIATE, LOOP_MERGE, COND_MERGE, GATHER)
    edges        (output port, consumer, consumer input slot); port -1 is a control edge, and
                 port -2 - p one that is dead exactly when output p is (`output_control`)
    fetch_ports  (output port, fetch position) for outputs fetched by the run
    num_ops      how many ops it stands for (RunMetadata.nodes_run counts ops)
"""

from __future__ import annotations

import collections
import operator
from typing import Any

import jax

from sluice.framework.interpreter.fusion import fusion_groups
from sluice.framework.interpreter.kinds import (
    ENTER,
    GATHER,
    GROUP,
    IMMEDIATE,
    LOOP_MERGE,
    NORMAL,
)
from sluice.framework.interpreter.partition_nodes import (
    ControlLoopNodes,
    recv_node,
    send_node,
)
from sluice.framework.interpreter.plan_node import (
    PlanNode,
    _all_on_host,
    _arrival,
)
from sluice.framework.interpreter.plan_node import (  # tests put spy kernels in it through plan
    kernel_cache as kernel_cache,
)
from sluice.framework.ir import errors
from sluice.framework.ir.graph import Operation, Tensor
from sluice.framework.prune import DEAD, Pruned


class FeedSource:
    """Where a fed value enters the plan: a source with one output port and its edges."""

    __slots__ = ("edges", "fetch_ports")

    def __init__(self):
        self.edges: list[tuple[int, Any, int]] = []
        self.fetch_ports: list[tuple[int, int]] = []


class FusedGroup:
    """Pure ops of one frame run as one call, with the whitepaper's dead-tensor rule kept exactly.

    Its inputs are the distinct tensors and control sources its members take from outside; its
    outputs are the member outputs used outside and a value-less output for each member with a
    control consumer outside. An output is dead exactly when an input it depends on is dead, which
    is what running the members one by one gives. Identity members forward their input and Const
    members are materialised once per plan; the other members run their kernels in order.
    """

    __slots__ = (
        "ops",
        "kind",
        "arrival",
        "num_inputs",
        "num_pending",
        "edges",
        "fetch_ports",
        "num_ops",
        "dead_outputs",
        "input_slots",
        "template",
        "steps",
        "output_slots",
        "output_deps",
        "_gather_outputs",
        "_output_slot",
        "_slot_of",
        "_deps",
        "_none_slot",
        "_ports",
        "jitted",
    )

    def __init__(self, members: list[PlanNode], fed: set[Tensor], dropped: Any = ()):
        """`dropped`: control inputs the group does not wait for (the pivots of a sender-driven
        loop, see `partitioner.SenderDriven`), unless it would then wait for nothing."""
        ops = [m.op for m in members]
        inside = set(ops)
        self.ops = ops
        self.kind = GROUP
        self.input_slots: dict[tuple[str, Any], int] = {}  # ("data", tensor) | ("control", op)
        for op in ops:
            for t in op.inputs:
                if t in fed or t.op not in inside:
                    self.input_slots.setdefault(("data", t), len(self.input_slots))
            for c in op.control_inputs:
                if c not in inside and c not in dropped:
                    self.input_slots.setdefault(("control", c), len(self.input_slots))
        if dropped and not self.input_slots:  # its constants: signalled in each iteration
            self.__init__(members, fed)
            return
        self.num_inputs = self.num_pending = len(self.input_slots)
        self.arrival = _arrival(GROUP, self.num_pending, False)
        self.edges = []
        self.fetch_ports = []
        self.num_ops = len(ops)

        template: list[Any] = [None] * self.num_inputs  # slots: the inputs, then member outputs
        slot_of: dict[Tensor, int] = {}  # where each member output lives in `template`
        deps: dict[Operation, frozenset[int]] = {}  # the group inputs each member depends on
        steps = []
        for member in members:
            op = member.op
            outside = [t in fed or t.op not in inside for t in op.inputs]
            args = [
                self.input_slots[("data", t)] if out else slot_of[t]
                for t, out in zip(op.inputs, outside)
            ]
            member_deps = {a for a, out in zip(args, outside) if out}
            for t, out in zip(op.inputs, outside):
                if not out:
                    member_deps |= deps[t.op]
            for c in op.control_inputs:
                if c in inside:
                    member_deps |= deps[c]
                elif ("control", c) in self.input_slots:  # not a dropped pivot
                    member_deps.add(self.input_slots[("control", c)])
            deps[op] = frozenset(member_deps)
            if op.type == "Identity":
                slot_of[op.outputs[0]] = args[0]
                continue
            first = len(template)
            for t in op.outputs:
                slot_of[t] = len(template)
                template.append(None)
            if op.type == "Const":
                template[first:] = member.compute(None, ())
            else:
                steps.append(
                    (member.compute, _getter(args), first, len(template), tuple(sorted(deps[op])))
                )
        self.steps = steps
        self._none_slot = len(template)
        template.append(None)
        self.template = template[self.num_inputs :]  # a run puts its inputs in front
        self._slot_of = slot_of
        self._deps = deps
        self._ports: dict[tuple[Tensor | None, Operation], int] = {}
        self.output_slots: list[int] = []
        self.output_deps: list[tuple[int, ...]] = []
        self.dead_outputs: tuple = ()
        self._gather_outputs: Any = lambda values: ()  # no outputs until `output_port` adds them
        self._output_slot = 0
        self.jitted: Any = None  # the whole group as one XLA program (see `compile`)

    def compile(self) -> None:
        """Runs the group, when all its inputs are live, as one `jax.jit` program instead of one
        dispatch per member: a compiled region of a partitioned graph. Groups with a member
        that needs host values (a shape argument) or checks its inputs stay op by op."""
        if all(op.op_def.jit and op.op_def.check is None for op in self.ops):
            self.jitted = _CompiledGroup(self)

    def output_port(self, t: Tensor | None, op: Operation) -> int:
        """The group output carrying member output `t`, or member `op`'s control signal when `t`
        is None; made on first request, as the plan wires the group's consumers."""
        port = self._ports.get((t, op))
        if port is None:
            port = self._ports[(t, op)] = len(self.output_slots)
            self.output_slots.append(self._slot_of[t] if t is not None else self._none_slot)
            self.output_deps.append(tuple(sorted(self._deps[op])))
            self.dead_outputs = (DEAD,) * len(self.output_slots)
            slots = self.output_slots
            # one output: a 1-tuple made in `run_members` (outputs are tuples, as every node's)
            self._gather_outputs = operator.itemgetter(*slots) if len(slots) > 1 else None
            self._output_slot = slots[0]
        return port

    def run(self, inputs: Any) -> tuple:
        """All inputs live: runs the members and returns the outputs."""
        if self.jitted is not None and not _all_on_host(inputs):
            return self.jitted(inputs)  # small host values stay with the host kernels
        return self.run_members(inputs)

    def run_members(self, inputs: Any) -> tuple:
        values = [*inputs, *self.template]
        for compute, gather, first, stop, _ in self.steps:
            values[first:stop] = compute(None, gather(values))
        outputs = self._gather_outputs
        if outputs is None:
            return (values[self._output_slot],)
        return outputs(values)

    def run_dead(self, inputs: Any) -> list:
        """Some inputs are DEAD: runs only the members that depend on live inputs alone, and
        returns the outputs with DEAD for those that depend on a dead input."""
        dead = [x is DEAD for x in inputs]
        values = [*inputs, *self.template]
        for compute, gather, first, stop, deps in self.steps:
            if not any(dead[d] for d in deps):
                values[first:stop] = compute(None, gather(values))
        return [
            DEAD if any(dead[d] for d in deps) else values[s]
            for s, deps in zip(self.output_slots, self.output_deps)
        ]


class _CompiledGroup:
    """A fused group's members traced into one jitted function; if tracing fails (a member
    that cannot run on traced values), the group goes back to running op by op."""

    def __init__(self, group: FusedGroup):
        self.group = group
        self.function = jax.jit(lambda *inputs: tuple(group.run_members(inputs)))

    def __call__(self, inputs: Any) -> tuple:
        try:
            return self.function(*inputs)
        except (errors.OpError, jax.errors.JAXTypeError, TypeError, ValueError):
            self.group.jitted = None
            return self.group.run_members(inputs)


class Plan:
    """What one (fetches, targets, feeds) signature runs: the pruned nodes and their wiring.

    `nodes` maps every pruned op to its PlanNode, in graph order; `groups` are the fused groups
    (their members stay in `nodes`; `fuse=False` makes none, which tests compare against);
    `roots` are the nodes and groups that wait for nothing.
    """

    def __init__(
        self,
        pruned: Pruned,
        fuse: bool = True,
        partition: Any = None,
        placement: dict | None = None,
        compile_regions: bool = False,
    ):
        """With `partition` (a `placement.partitioner.Partition`) and the `placement` it came
        from, the plan runs that device's subgraph: its ops, a Send per cut edge leaving it, a
        Recv per cut edge entering it, and its control loops; `remote` lists those nodes.
        `compile_regions` runs each fused group as one jitted program (`FusedGroup.compile`)."""
        feeds, fetches = list(pruned.feeds), list(pruned.fetches)
        fed, fed_ops = set(feeds), pruned.fed_ops
        ordered = list(pruned.ops) if partition is None else list(partition.ops)
        self.nodes = {op: PlanNode(op) for op in ordered}
        if partition is None:
            _check_frames(ordered, fed)
        for op, node in self.nodes.items():
            if node.arrival == LOOP_MERGE and op.control_inputs:
                raise errors.InternalError(None, op, "A loop's Merge may not have control inputs.")
        if not fuse:
            grouped = []
        elif partition is None:
            grouped = fusion_groups(ordered, fed)
        else:  # grouped over the whole graph, so no group waits on itself through another device
            grouped = [
                ops
                for ops in fusion_groups(list(pruned.ops), fed, placement)
                if placement[ops[0]] is partition.device
            ]
        dropped = partition.dropped_pivots if partition is not None else {}
        self.groups = [FusedGroup([self.nodes[op] for op in ops], fed, dropped) for ops in grouped]
        if compile_regions:
            for group in self.groups:
                group.compile()
        unit_of: dict[Operation, PlanNode | FusedGroup] = dict(self.nodes)
        for group in self.groups:
            unit_of.update(dict.fromkeys(group.ops, group))

        def source(t: Tensor | None, op: Operation) -> tuple[Any, int]:
            unit = unit_of.get(op)
            if unit is None:  # computed on another device
                if t is None and op in stand_ins:
                    return stand_ins[op]
                return recvs[t if t is not None else op], -1 if t is None else 0
            if unit.kind == GROUP:
                return unit, unit.output_port(t, op)
            return unit, -1 if t is None else t.value_index

        def target(op: Operation, slot: int, t: Tensor | None) -> tuple[Any, int]:
            unit = unit_of[op]
            if unit.kind == GROUP:
                key = ("data", t) if t is not None else ("control", op.control_inputs[slot])
                return unit, unit.input_slots[key]
            return unit, slot if t is not None else -1

        wired: set[tuple] = set()  # a group takes each outside tensor once, however many use it
        self.remote: list[Any] = []
        recvs: dict[Any, Any] = {}  # filled before anything reads it
        stand_ins: dict[Operation, tuple[Any, int]] = {}  # ... and this, for loop pivots
        self.feed_sources = [FeedSource() for _ in feeds]
        source_of_feed = dict(zip(feeds, self.feed_sources))
        # sender-driven loops here (`partitioner.SenderDriven`): Recv key -> its Recv; loop ->
        # (end-of-frame messages to wait for, the node signalling each iteration made); and the
        # loops whose receivers elsewhere this partition sends an end-of-frame message
        self.driven: dict[tuple, Any] = {}
        self.driven_frames: dict[str, tuple[list[str], Any]] = {}
        self.frame_ends: dict[str, list[Any]] = {}
        undriven: dict[tuple, tuple[Any, int, Any]] = {}  # control slots a dropped pivot fed
        if partition is not None:
            self._add_partition_nodes(partition, source, wired, recvs, stand_ins, source_of_feed)
        for op in ordered:
            unit = unit_of[op]
            for slot, t in enumerate(op.inputs):
                if t in fed:
                    self._wire((source_of_feed[t], 0), target(op, slot, t), wired)
                elif unit_of.get(t.op) is not unit:
                    self._wire(source(t, t.op), target(op, slot, t), wired)
            for slot, c in enumerate(op.control_inputs):
                if c in dropped:
                    if unit.kind == GROUP and ("control", c) not in unit.input_slots:
                        continue  # the group does not wait for it
                    dst, at = target(op, slot, None)
                    undriven[(dst, at if at >= 0 else op)] = (dst, at, dropped[c])
                elif c in fed_ops:
                    self._wire((source_of_feed[c.outputs[0]], 0), target(op, slot, None), wired)
                elif unit_of.get(c) is not unit:
                    self._wire(source(None, c), target(op, slot, None), wired)
        self.fetch_from_feed: dict[int, int] = {}
        feed_index = {t: i for i, t in enumerate(feeds)}
        for pos, t in enumerate(fetches):
            if t in fed:
                self.fetch_from_feed[pos] = feed_index[t]
            elif t.op in unit_of:
                unit, port = source(t, t.op)
                unit.fetch_ports.append((port, pos))
        self.num_fetches = len(fetches)
        for unit, slot, frame in undriven.values():
            self._drop_pivot(unit, slot, frame.name)
        units = [n for op, n in self.nodes.items() if unit_of[op] is n] + self.groups
        if partition is not None:
            units = _skip_identities(units, self.remote)
        driven = set(self.driven.values())
        self.roots = [u for u in units + self.remote if u.num_pending == 0 and u not in driven]
        self.enters_per_frame = collections.Counter(
            n.frame_name for n in list(self.nodes.values()) + self.remote if n.kind == ENTER
        )

    def _add_partition_nodes(
        self,
        partition: Any,
        source: Any,
        wired: set,
        recvs: dict,
        stand_ins: dict,
        source_of_feed: dict,
    ) -> None:
        """Adds the partition's control loops, Sends, Recvs and copies of loop-invariant Enters
        placed elsewhere; `recvs` gets the node each value from another device comes out of: a
        cut edge's Recv or an Enter's copy, by tensor (or by source op, for a control edge), and
        `stand_ins` the (node, output) that stands in for a loop pivot placed elsewhere."""
        loops = {}

        def fires(trigger: Any) -> Any:
            """The node that fires once per iteration: a control loop or a loop Merge."""
            if isinstance(trigger, Operation):
                return source(trigger.outputs[0], trigger)[0]
            return loops[trigger.frame].loop  # a ControlLoop

        for loop in partition.control_loops:  # outer loops first
            nodes = loops[loop.frame] = ControlLoopNodes(loop)
            if loop.outer is None:
                self._wire((nodes.start, 0), (nodes.enter, 0), wired)
            else:
                self._wire((fires(loop.outer), 0), (nodes.enter, 0), wired)
            self._wire((nodes.enter, 0), (nodes.loop, 0), wired)
            self.remote.extend(nodes.nodes())
        for pivot, stand_in in partition.pivots.items():  # its true output: live as the pivot
            if isinstance(stand_in, Operation):  # a loop Switch
                stand_ins[pivot] = (source(stand_in.outputs[1], stand_in)[0], output_control(1))
            else:  # a ControlLoop: its Switch's true output
                stand_ins[pivot] = (loops[stand_in.frame].pivot, output_control(1))
        for frame, driven in partition.driven.items():
            senders = [device.name for device in driven.senders]
            self.driven_frames[frame.name] = (senders, None)
        for frame, devices in partition.frame_ends.items():
            self.frame_ends[frame.name] = devices
        for edge in partition.recvs:
            trigger = partition.recv_frame(edge)
            driven = trigger if trigger in partition.driven.values() else None
            node = recvs[edge.tensor if edge.tensor is not None else edge.src] = recv_node(
                edge, triggered=trigger is not None and driven is None
            )
            if driven is not None:  # its value makes its iteration (`SenderDriven`)
                node.frame_name, node.expected = driven.frame.name, driven.recvs
                self.driven[edge] = node
            elif trigger is not None:  # fired every iteration by a Merge of its loop
                self._wire((fires(trigger), -1), (node, -1), wired)
            self.remote.append(node)
        copies = [(enter, PlanNode(enter)) for enter in partition.enters]
        for enter, node in copies:  # an Enter runs the same here as on its own device
            recvs[enter.outputs[0]] = node
            self.remote.append(node)
        for enter, node in copies:  # its input: a feed, a local value, a Recv or another copy
            t = enter.inputs[0]
            self._wire(
                (source_of_feed[t], 0) if t in source_of_feed else source(t, t.op), (node, 0), wired
            )
        for loop in partition.control_loops:
            self._wire(
                source(loop.predicate, loop.predicate.op), (loops[loop.frame].loop, 1), wired
            )
        for edge in partition.sends:
            node = send_node(edge)
            if edge.tensor is None:
                self._wire(source(None, edge.src), (node, -1), wired)
            else:
                self._wire(source(edge.tensor, edge.src), (node, 0), wired)
            self.remote.append(node)

    def _drop_pivot(self, unit: Any, slot: int, frame: str) -> None:
        """`unit` waits no more for the pivot of a sender-driven loop at control input `slot`:
        it takes a value dead exactly when the pivot is, or, taking nothing else, it gets a
        live signal in each iteration made here (see `partitioner.SenderDriven`)."""
        unit.num_pending -= 1
        if unit.num_pending == 0:  # the body's constants
            senders, start = self.driven_frames[frame]
            if start is None:
                start = PlanNode.without_op(f"iterations of {frame}", NORMAL, 0, 0, 1)
                self.driven_frames[frame] = (senders, start)
            start.edges.append((-1, unit, slot))
            unit.num_pending = 1
        if unit.kind != GROUP and unit.arrival in (IMMEDIATE, GATHER):  # a group gathers its slots
            unit.arrival = IMMEDIATE if unit.num_pending == 1 else GATHER

    @staticmethod
    def _wire(source: tuple[Any, int], target: tuple[Any, int], wired: set[tuple]) -> None:
        (src, port), (dst, slot) = source, target
        if slot >= 0 and (src, port, dst, slot) in wired:
            return
        wired.add((src, port, dst, slot))
        src.edges.append((port, dst, slot))

    def num_nodes(self) -> int:
        return len(self.nodes)


def _check_frames(ordered: list[Operation], fed: set[Tensor]) -> None:
    """Raises InvalidArgumentError, as TF1's executor, when an op takes inputs from two frames
    (a graph wired by hand: `while_loop` builds none). An Enter's outputs are in the child frame
    it names, an Exit's in its frame's parent, any other op's in the frame of its inputs (data
    and control); a Merge's back edge (from NextIteration) and the fed tensors are not looked
    at. Frames are told apart by name, as TF1 does."""
    members = set(ordered)
    sources: dict[Operation, list[Operation]] = {}
    waiting = collections.Counter()
    users: dict[Operation, list[Operation]] = collections.defaultdict(list)
    for op in ordered:
        found = [t.op for t in op.inputs if t not in fed] + list(op.control_inputs)
        found = [
            src
            for src in found
            if src in members and not (op.type == "Merge" and src.type == "NextIteration")
        ]
        sources[op] = found
        waiting[op] = len(found)
        for src in found:
            users[src].append(op)
    frame_of: dict[Operation, tuple] = {}  # op -> the frame path its outputs are in
    ready = collections.deque(op for op in ordered if waiting[op] == 0)
    while ready:  # in topological order, so every source's frame is known
        op = ready.popleft()
        here, first = None, None
        for src in sources[op]:
            f = frame_of[src]
            if here is None:
                here, first = f, src
            elif f != here:
                raise errors.InvalidArgumentError(
                    None,
                    op,
                    f"The node '{op.name}' has inputs from different frames. The input "
                    f"'{src.name}' is in frame '{f[-1] if f else ''}'. The input '{first.name}' "
                    f"is in frame '{here[-1] if here else ''}'.",
                )
        here = here or ()
        if op.type == "Enter":
            here = here + (op.get_attr("frame_name"),)
        elif op.type == "Exit":
            here = here[:-1]
        frame_of[op] = here
        for user in users[op]:
            waiting[user] -= 1
            if waiting[user] == 0:
                ready.append(user)


def _skip_identities(units: list[Any], remote: list[Any]) -> list[Any]:
    """Wires the consumers of each lone Identity op (no control inputs, in no fused group)
    to its producer's output directly, and returns `units` without those Identities. A
    partition has them where a cut separates a loop variable's Identity from the body that
    uses it. An Identity fires once for each token its producer gives it, with the same value
    or DEAD, so its consumers get the same tokens; a control edge from it becomes one that is
    dead exactly when that output is; its fetches and its count in `nodes_run` move to its
    producer."""
    incoming: dict[Any, list[Any]] = collections.defaultdict(list)
    for unit in units + remote:
        for _, dst, _ in unit.edges:
            incoming[dst].append(unit)
    skipped = set()
    for node in units:
        op = node.op if node.kind == NORMAL else None
        if op is None or op.type != "Identity" or op.control_inputs:
            continue
        if len(incoming[node]) != 1:
            continue  # fed: a feed's source delivers to it directly
        (producer,) = incoming[node]
        edges = []
        for port, dst, slot in producer.edges:
            if dst is not node:
                edges.append((port, dst, slot))
                continue
            for out, consumer, consumer_slot in node.edges:  # out: 0, or -1 (control)
                edges.append((port if out == 0 else output_control(port), consumer, consumer_slot))
                incoming[consumer] = [producer if u is node else u for u in incoming[consumer]]
            producer.fetch_ports.extend((port, pos) for _, pos in node.fetch_ports)
        producer.edges = edges
        producer.num_ops += node.num_ops
        skipped.add(node)
    return [unit for unit in units if unit not in skipped]


def output_control(port: int) -> int:
    """The edge port of a control edge that is dead exactly when output `port` is."""
    return -2 - port


def _getter(slots: Any) -> Any:
    """A function of a list that returns its items at `slots` as a sequence: for one slot a
    slice of it (a list, in C, where a lambda making a 1-tuple is a Python call per member run)."""
    if len(slots) == 1:
        (slot,) = slots
        return operator.itemgetter(slice(slot, slot + 1))
    return operator.itemgetter(*slots) if slots else lambda values: ()
