"""The interpreted engine: the tagged-token executor of the control-flow whitepaper.

Every value travels with a tag (frame instance, iteration) and a dead bit. A node is ready when
all its inputs for one tag have arrived (a Merge: when any live input has, or all expected inputs
are dead); a node with a dead input forwards dead outputs without running its kernel. Frames are
created by their first Enter; NextIteration starts the next iteration, at most
`parallel_iterations` at a time; an iteration is done when nothing of it is queued and every
earlier one is done, and a frame is done when its Enters have all arrived and its iterations are
done. The run ends when the ready queue is empty. Work is a queue, never Python recursion, so a
loop of 100,000 iterations needs no deeper stack than a loop of one.

A token is `(node, iteration, inputs, dead)`; the iteration record knows its frame, so a tag is
one reference. A dead value is the `DEAD` marker. The plan (`executor_plan`) has resolved every
edge, and fused runs of pure ops into groups that run as one call with the same dead rule.
Host kernels run with NumPy's floating-point warnings off: they give inf and nan silently, as
the device kernels do.

A partition of a graph placed on several devices runs in an executor of its own (see
`partitioned`): its Sends deposit values, dead or alive, in the run's rendezvous under the tag
of the iteration that sent them, and its Recvs wait for theirs without blocking the executor,
keeping their tag open until the value has come. Both run as their token is delivered, without
a turn in the ready queue (arrival CUT): a value crossing devices costs no more dispatch than
the node that computed it.
"""

from __future__ import annotations

import collections
import time
from typing import Any

import jax
import numpy as np

from sluice.framework.interpreter.kinds import (
    CONTROL_LOOP,
    CUT,
    ENTER,
    EXIT,
    GATHER,
    GROUP,
    IMMEDIATE,
    LOOP_MERGE,
    LOOPCOND,
    MERGE,
    NEXT,
    NORMAL,
    RECV,
    SEND,
    SWITCH,
)
from sluice.framework.interpreter.plan import Plan
from sluice.framework.interpreter.plan_node import host_value
from sluice.framework.ir import errors
from sluice.framework.prune import DEAD

__all__ = ["DEAD", "Executor", "Plan"]


class _Gathering:
    """A node's inputs for one tag, gathered until all have come: `inputs` (one slot per data
    input), `missing` (inputs and control inputs still to come), `dead` (one that came was)."""

    __slots__ = ("inputs", "missing", "dead")


_ABSENT = object()  # no entry: `dict.pop`'s default
_DEAD_BODY = (None, DEAD)  # a control loop's outputs when the loop ends: its body's signal DEAD

_new_object = object.__new__  # a _Gathering is made without an __init__ call: it is made once
# per node and tag, in the executor's inner loop


class _CondMergeWait:
    """A cond Merge's tokens for one tag: it fires on the first live input (or when all are
    dead), once every control input has come."""

    __slots__ = ("received", "controls_missing", "token", "fired")

    def __init__(self, controls: int):
        self.received = 0  # data inputs come so far
        self.controls_missing = controls
        self.token: tuple | None = None  # (value, slot) it fires with, once chosen
        self.fired = False


class _Iteration:
    """One iteration of one frame instance: the tag its tokens carry."""

    __slots__ = ("frame", "index", "pending", "outstanding", "child_frames", "key")

    def __init__(self, frame: _Frame, index: int):
        self.frame = frame
        self.index = index
        self.key: tuple | None = None  # the tag as a rendezvous key (see `tag_key`), when asked
        self.pending: dict[Any, Any] = {}  # node -> its _Gathering or _CondMergeWait
        self.outstanding = 0  # nodes of this iteration queued or running
        self.child_frames = 0  # child frame instances started from this iteration, not yet done


class _Frame:
    __slots__ = (
        "name",
        "parent",
        "parent_state",
        "iterations",
        "oldest",
        "newest",
        "max_parallel",
        "pending_enters",
        "invariants",
        "deferred",
        "live_exits",
        "dead_exits",
        "children",
        "held",
    )

    def __init__(
        self, name: str, parent_state: _Iteration | None, max_parallel: int, pending_enters: int
    ):
        self.name = name
        self.parent_state = parent_state
        self.parent = parent_state.frame if parent_state is not None else None
        self.iterations: dict[int, _Iteration] = {}
        self.oldest = 0
        self.newest = -1
        self.max_parallel = max(1, max_parallel)
        self.pending_enters = pending_enters
        self.invariants: list[tuple[Any, Any]] = []  # (loop-constant Enter, value or DEAD)
        self.deferred: list[tuple[Any, Any]] = []  # (NextIteration, value) beyond the window
        self.live_exits: set = set()
        self.dead_exits: set = set()
        self.children: dict[tuple[str, int], _Frame] = {}
        self.held = 0  # a sender-driven loop's end-of-frame messages still to come


def tag_key(state: _Iteration) -> tuple:
    """The tag of `state` as the frames and iterations from the outermost loop in, the same in
    every partition: `((frame name, iteration), ...)`, () at the top level."""
    key = state.key
    if key is None:
        frame = state.frame
        parent = frame.parent_state
        if parent is None:
            key = ()
        else:  # the parent's key is there already, but for the first iteration of a frame
            outer = parent.key
            if outer is None:
                outer = tag_key(parent)
            key = outer + ((frame.name, state.index),)
        state.key = key
    return key


class Executor:
    """Runs one Plan once: `Executor(plan, ctx).run(feed_values) -> fetched values`.

    A partition's executor gets a `link` to the other partitions (see `partitioned`): its Sends
    and Recvs go through it, a Recv waits for its value without blocking the executor, and the
    run stops when the link says so (an error elsewhere, a deadline).
    """

    def __init__(
        self, plan: Plan, ctx: Any, stats: Any = None, link: Any = None, trace: list | None = None
    ):
        self.plan = plan
        self.ctx = ctx
        self.link = link
        self.mailbox = link.mailbox if link is not None else None  # where its Recvs collect
        # With a `trace` list, every node appends (node, frame name, iteration, start ns, end
        # ns); a kernel's end is when its results are ready, not when JAX was handed the work.
        self.trace = trace
        self.waiting = 0  # Recvs whose value has not come yet
        self.ready: collections.deque = collections.deque()
        self.root = _Frame("", None, 1, 0)
        self.results: list[Any] = [None] * plan.num_fetches
        self.nodes_run = 0
        self.cut_nodes_run = 0  # Sends and Recvs run as their token came (arrival CUT)
        # A partition's: called when it has nothing to run but waits for values, before it
        # yields (the driver runs the other partitions' work then, see `partitioned`)
        # (returns whether it ran a whole slice: then the steps yield, see `partitioned`)
        self.idle: Any = None
        self.root_state = root_state = self._new_iteration(self.root, 0)
        self.driven_frames: dict[str, _Frame] = {}
        for name, (senders, _) in plan.driven_frames.items():  # made now, ended by its senders
            frame = self.root.children[(name, 0)] = _Frame(name, root_state, 1, 0)
            self.driven_frames[name] = frame
            frame.held = len(senders)
            root_state.child_frames += 1
            self.waiting += len(senders)

    def run(self, feed_values: list[Any]) -> list[Any]:
        """Runs the plan (of one device: no link) to its end and returns the fetched values."""
        with np.errstate(all="ignore"):
            for _ in self.steps(feed_values):
                pass  # without a link nothing waits: the generator never yields
        return self.results

    def steps(self, feed_values: list[Any], slice_nodes: int = 0) -> Any:
        """The run as a generator, for a scheduler that runs several executors on one thread:
        it yields when it waits for a Recv's value (and, with `slice_nodes`, after that many
        nodes), and expects its link to have delivered what arrived when it is resumed."""
        plan = self.plan
        root_state = self.root_state
        for source, value in zip(plan.feed_sources, feed_values):
            self._send(source, (host_value(value),), None, root_state)
        for pos, feed_pos in plan.fetch_from_feed.items():
            self.results[pos] = feed_values[feed_pos]
        ready = self.ready
        for node in plan.roots:
            ready.append((node, root_state, (), False))
        root_state.outstanding += len(plan.roots)
        handlers = self.handlers = self._handlers()
        popleft = ready.popleft
        mailbox = self.mailbox
        nodes_run = 0
        pause_at = slice_nodes
        while True:  # the caller has NumPy's floating-point warnings off (see `run`)
            # The same loop twice: without slices (one device) it checks nothing per node,
            # which W5 would pay 3% for.
            if not slice_nodes:
                while ready:
                    node, state, inputs, dead = popleft()
                    handlers[node.kind](node, state, inputs, dead)
                    nodes_run += node.num_ops
                    state.outstanding -= 1
                    if not state.outstanding and not state.child_frames:
                        self._iteration_maybe_done(state.frame)
            while ready:
                node, state, inputs, dead = popleft()
                handlers[node.kind](node, state, inputs, dead)
                nodes_run += node.num_ops
                state.outstanding -= 1
                if not state.outstanding and not state.child_frames:
                    self._iteration_maybe_done(state.frame)
                if nodes_run >= pause_at:  # let the driver look at the others and the time
                    pause_at = nodes_run + slice_nodes
                    self.nodes_run = nodes_run + self.cut_nodes_run
                    yield
            if not self.waiting:
                break
            # nothing to run but values to wait for: the driver may run the others' work here,
            # and this partition's that it brings, up to a slice of nodes
            spent = self.idle is not None and self.idle()
            if mailbox.inbox:  # sent back while this turn ran a receiver's work
                for deliver, token, value, dead in mailbox.arrived():
                    deliver(token, value, dead)
            if ready and not spent:
                continue
            self.nodes_run = nodes_run + self.cut_nodes_run
            yield
        self.nodes_run = nodes_run + self.cut_nodes_run

    def _handlers(self) -> tuple:
        """The rule that runs each kind of node, indexed by kind."""
        handlers = {
            NORMAL: self._run_normal,
            SWITCH: self._run_switch,
            MERGE: self._run_merge,
            ENTER: self._run_enter,
            EXIT: self._run_exit,
            NEXT: self._run_next,
            LOOPCOND: self._run_loopcond,
            GROUP: self._run_group,
            SEND: self._run_cut,
            RECV: self._run_cut,
            CONTROL_LOOP: self._run_control_loop,
        }
        if self.trace is not None:
            handlers = {kind: self._traced(kind, handler) for kind, handler in handlers.items()}
        return tuple(handlers[kind] for kind in sorted(handlers))

    def drain(self, limit: int) -> int:
        """Runs the ready queue, up to about `limit` nodes, outside `steps`: a partition's
        driver runs it within another partition's turn (see `partitioned._Turns.help_others`)
        instead of in a turn of its own. Returns how many it ran."""
        ready, handlers = self.ready, self.handlers
        popleft = ready.popleft
        done = 0
        while ready and done < limit:
            node, state, inputs, dead = popleft()
            handlers[node.kind](node, state, inputs, dead)
            done += node.num_ops
            state.outstanding -= 1
            if not state.outstanding and not state.child_frames:
                self._iteration_maybe_done(state.frame)
        self.cut_nodes_run += done  # counted with the nodes run outside the steps loop
        return done

    # -- Send and Recv: a partition's cut edges --------------------------------------------------
    def _cut(self, node: Any, state: _Iteration, value: Any, slot: int = 0) -> None:
        """Runs a Send, a Recv or a control loop on the token `value` (DEAD, a value, or None:
        no data) that came to its input `slot`."""
        kind = node.kind
        if kind == CONTROL_LOOP:
            if slot == 0:
                self._begin_iteration(node, state, value)
                return
            # the predicate, once per iteration of a loop split across devices: inline
            begun = state.pending.pop(node, _ABSENT)
            if begun is _ABSENT:  # before its iteration began (a predicate computed here)
                state.pending[node] = [value]
            else:
                self._decide(node, state, begun[0], value)
            return
        tag = state.key
        if tag is None:
            tag = tag_key(state)
        if kind == SEND:
            if value is DEAD:
                self.link.send(node, tag, None, True)
            else:
                self.link.send(node, tag, value, False)
        elif value is DEAD:  # a Recv triggered by a dead signal: nothing was sent for this tag
            self._send(node, node.dead_outputs, DEAD, state)
        else:  # the mailbox's matching (see `rendezvous`), inline: 3 Recvs per W5 iteration
            key = (node.key, tag)
            box = self.mailbox
            item = box.values.pop(key, None)
            if item is None:  # not come yet: the tag stays open until it has
                if key in box.waiting:
                    raise errors.InternalError(None, None, f"Two receives of one key: {key}.")
                box.waiting[key] = (node, state)
                state.outstanding += 1
                self.waiting += 1
            elif item[1]:
                self._send(node, node.dead_outputs, DEAD, state)
            else:
                self._send(node, item, None, state)  # (value, dead): port 0 is the value

    def _run_cut(self, node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
        # from the ready queue: a Recv with no trigger, a root of its partition
        self._cut(node, state, DEAD if dead else (inputs[0] if inputs else None))

    def receive(self, token: tuple, value: Any, dead: bool) -> None:
        """Delivers the value (or dead bit) a waiting Recv's `token`, `(node, state)`, was
        waiting for: queues the Recv's consumers, runs no kernel."""
        node, state = token
        self.waiting -= 1
        if dead:
            self._send(node, node.dead_outputs, DEAD, state)
        else:
            self._send(node, (value,), None, state)
        state.outstanding -= 1
        if not state.outstanding and not state.child_frames:
            self._iteration_maybe_done(state.frame)

    def arrive(self, token: tuple, value: Any, dead: bool) -> None:
        """Delivers a value of a sender-driven loop (see `partitioner.SenderDriven`), `token`
        `(Recv, tag)`: its first value of an iteration makes that iteration here; or, with the
        tag (), a sender's end-of-frame message (`token[0]` names the loop)."""
        node, tag = token
        if not tag:
            frame = self.driven_frames[node]
            self.waiting -= 1
            frame.held -= 1
            if not frame.held and not frame.iterations:
                self._frame_done(frame)
            return
        frame = self.driven_frames[node.frame_name]
        index = tag[0][1]
        state = frame.iterations.get(index)
        if state is None:
            if index < frame.oldest or not frame.held:
                raise errors.InternalError(
                    None,
                    None,
                    f"A value for iteration {index} of {frame.name!r} came late: {node}.",
                )
            state = frame.iterations[index] = _new_object(_Iteration)  # as _Iteration() makes
            state.frame, state.index, state.key, state.pending = frame, index, tag, {}
            state.child_frames = 0
            if index > frame.newest:
                frame.newest = index
            state.outstanding = node.expected  # until each of its Recvs here has had its value
            start = self.plan.driven_frames[frame.name][1]
            if start is not None:  # the body's constants
                self._send(start, (None,), None, state)
        self.cut_nodes_run += 1
        if dead:
            self._send(node, node.dead_outputs, DEAD, state)
        else:
            self._send(node, (value,), None, state)
        state.outstanding -= 1
        if not state.outstanding and not state.child_frames:
            self._iteration_maybe_done(frame)

    # -- a partition's control loop (see `partition_nodes.ControlLoopNodes`) -------------------
    def _begin_iteration(self, node: Any, state: _Iteration, token: Any) -> None:
        """Iteration `state` of control loop `node` begins with `token` (its Merge fires): the
        Recvs it triggers and the inner control loops' Enters get it now; the body's signal
        waits for the predicate, unless that came first."""
        predicate = state.pending.pop(node, _ABSENT)
        if predicate is _ABSENT:
            state.pending[node] = (token,)  # begun: the predicate may come inside the _send
        self._send(node, (token,), DEAD if token is DEAD else None, state)
        if predicate is not _ABSENT:
            self._decide(node, state, token, predicate[0])

    def _decide(self, node: Any, state: _Iteration, token: Any, predicate: Any) -> None:
        """The control loop's Switch: the body's signal, and the next iteration when the
        predicate is true (from the ready queue, so that iterations never recurse)."""
        if token is DEAD or predicate is DEAD or not predicate:
            self._send(node.pivot, _DEAD_BODY, None, state)  # the loop ends on this path
            return
        self._send(node.pivot, (None, token), None, state)
        self.ready.append((node, state, (token,), False))
        state.outstanding += 1

    def _run_control_loop(self, node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
        """The control loop's NextIteration: begins the iteration after `state` with the token
        in `inputs`, or defers it while `parallel_iterations` are in flight."""
        frame = state.frame
        index = state.index + 1
        next_state = frame.iterations.get(index)
        if next_state is None:
            if index - frame.oldest >= frame.max_parallel:
                frame.deferred.append((node, inputs[0]))
                return
            next_state = self._new_iteration(frame, index)
        self._begin_iteration(node, next_state, inputs[0])

    # -- frames and iterations -----------------------------------------------------------------
    def _new_iteration(self, frame: _Frame, index: int) -> _Iteration:
        state = frame.iterations[index] = _Iteration(frame, index)
        frame.newest = index
        if self.link is not None:  # a partition's: its tag as a rendezvous key (see `tag_key`)
            parent = frame.parent_state
            if parent is None:
                state.key = ()
            elif parent.key is not None:
                state.key = parent.key + ((frame.name, index),)
        for node, value in frame.invariants:
            self._forward(node, value, state)
        return state

    def _child_frame(self, state: _Iteration, node: Any) -> _Frame:
        frame = state.frame
        key = (node.frame_name, state.index)
        child = frame.children.get(key)
        if child is None:
            child = _Frame(
                node.frame_name,
                state,
                node.parallel_iterations,
                self.plan.enters_per_frame[node.frame_name],
            )
            frame.children[key] = child
            state.child_frames += 1
            self._new_iteration(child, 0)
        return child

    def _iteration_maybe_done(self, frame: _Frame) -> None:
        if frame.parent is None:
            return  # the root frame ends when the ready queue is empty
        while True:
            state = frame.iterations.get(frame.oldest)
            if state is None or state.outstanding or state.child_frames:
                break
            if frame.oldest == 0 and frame.pending_enters:
                break
            del frame.iterations[frame.oldest]
            frame.oldest += 1
            if frame.deferred and frame.newest + 1 - frame.oldest < frame.max_parallel:
                deferred, frame.deferred = frame.deferred, []
                state = self._new_iteration(frame, frame.newest + 1)
                for node, value in deferred:
                    if node.kind == CONTROL_LOOP:
                        self._begin_iteration(node, state, value)
                    else:
                        self._send(node, (value,), None, state)
        if not frame.iterations and not frame.deferred and not frame.held:
            self._frame_done(frame)

    def _frame_done(self, frame: _Frame) -> None:
        parent_state = frame.parent_state
        if frame.name in self.plan.frame_ends and frame.parent is self.root:
            self.link.end(frame.name)  # its receivers driven by this partition's values
        for node in frame.dead_exits - frame.live_exits:
            self._send(node, node.dead_outputs, DEAD, parent_state)
        del frame.parent.children[(frame.name, parent_state.index)]
        parent_state.child_frames -= 1
        if parent_state.child_frames == 0 and parent_state.outstanding == 0:
            self._iteration_maybe_done(frame.parent)

    # -- token delivery ------------------------------------------------------------------------
    def _send(self, node: Any, values: Any, control: Any, state: _Iteration) -> None:
        """Delivers `node`'s outputs, `values` (one per output port, DEAD for a dead one), to
        every consumer at tag `state`; its control edges (port -1) carry `control`, None or
        DEAD (a partition's stand-in for a loop pivot: DEAD as one output is). A consumer is
        queued when its inputs for the tag have all come (a loop Merge gets one per tag); until
        then they wait in the tag's `pending`."""
        ready = self.ready
        for port, dst, slot in node.edges:
            if port >= 0:
                value = values[port]
            elif port == -1:
                value = control
            else:  # a control edge dead exactly when output -2 - port is (`plan.output_control`)
                value = DEAD if values[-2 - port] is DEAD else None
            arrival = dst.arrival
            if arrival == IMMEDIATE:
                ready.append((dst, state, (value,) if slot >= 0 else (), value is DEAD))
                state.outstanding += 1
            elif arrival == GATHER:
                entry = state.pending.get(dst)
                if entry is None:  # built inline: this is the executor's hottest line
                    entry = state.pending[dst] = _new_object(_Gathering)
                    entry.inputs = [None] * dst.num_inputs
                    entry.missing, entry.dead = dst.num_pending, False
                if slot >= 0:
                    entry.inputs[slot] = value
                if value is DEAD:
                    entry.dead = True
                entry.missing -= 1
                if entry.missing == 0:
                    del state.pending[dst]
                    ready.append((dst, state, entry.inputs, entry.dead))
                    state.outstanding += 1
            elif arrival == LOOP_MERGE:
                ready.append((dst, state, (value, slot), value is DEAD))
                state.outstanding += 1
            elif arrival == CUT:  # a control edge's value is None or DEAD
                self.cut_nodes_run += dst.num_ops
                if dst.kind == SEND:  # here rather than in `_cut`: 3 per W5 iteration
                    tag = state.key
                    if tag is None:
                        tag = tag_key(state)
                    if value is DEAD:
                        self.link.send(dst, tag, None, True)
                    else:
                        self.link.send(dst, tag, value, False)
                elif dst.kind == RECV and value is not DEAD:  # triggered: 3 per W5 iteration
                    tag = state.key
                    if tag is None:
                        tag = tag_key(state)
                    key = (dst.key, tag)
                    box = self.mailbox
                    come, token = box.values, (dst, state)
                    if come and key in come or box.waiting.setdefault(key, token) is not token:
                        self._cut(dst, state, value, slot)  # come already (or twice received)
                    else:  # not come yet: waits (the mailbox's matching, see `rendezvous`)
                        state.outstanding += 1
                        self.waiting += 1
                else:
                    self._cut(dst, state, value, slot)
            else:
                self._cond_merge_token(dst, slot, value, state)
        if node.fetch_ports and state.frame is self.root:
            for port, pos in node.fetch_ports:
                self.results[pos] = values[port]

    def _cond_merge_token(self, node: Any, slot: int, value: Any, state: _Iteration) -> None:
        """A cond Merge fires on its first live input, or when all its inputs have come dead,
        and not before all its control inputs have come (dead or alive, as in TensorFlow)."""
        wait = state.pending.get(node)
        if wait is None:
            wait = state.pending[node] = _CondMergeWait(node.num_pending - node.num_inputs)
        if slot < 0:
            wait.controls_missing -= 1
        else:
            wait.received += 1
            if wait.token is None and (value is not DEAD or wait.received == node.num_inputs):
                wait.token = (value, slot)
        if not wait.fired and wait.controls_missing == 0 and wait.token is not None:
            wait.fired = True
            value, slot = wait.token
            self.ready.append((node, state, (value, slot), value is DEAD))
            state.outstanding += 1
        if wait.received == node.num_inputs and wait.controls_missing == 0:
            del state.pending[node]

    def _forward(self, node: Any, value: Any, state: _Iteration) -> None:
        """Sends one value (or DEAD) on `node`'s only output."""
        self._send(node, (value,), DEAD if value is DEAD else None, state)

    def _traced(self, kind: int, handler: Any) -> Any:
        trace, clock = self.trace, time.perf_counter_ns

        def run_traced(node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
            if kind == NORMAL and dead:  # forwarding dead outputs runs nothing: not recorded
                handler(node, state, inputs, dead)
                return
            start = clock()
            if kind == NORMAL:
                outputs = node.compute(self.ctx, inputs)
                jax.block_until_ready([v for v in outputs if isinstance(v, jax.Array)])
                trace.append((node, state.frame.name, state.index, start, clock()))
                self._send(node, outputs, None, state)
                return
            handler(node, state, inputs, dead)
            trace.append((node, state.frame.name, state.index, start, clock()))

        return run_traced

    # -- running one node: the whitepaper's rule for each kind ---------------------------------
    def _run_normal(self, node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
        if dead:
            self._send(node, node.dead_outputs, DEAD, state)
        else:
            self._send(node, node.compute(self.ctx, inputs), None, state)

    def _run_group(self, node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
        if dead:
            self._send(node, node.run_dead(inputs), None, state)
        else:
            self._send(node, node.run(inputs), None, state)

    def _run_switch(self, node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
        if dead:
            self._send(node, node.dead_outputs, DEAD, state)
        else:
            data, pred = inputs
            self._send(node, (DEAD, data) if pred else (data, DEAD), None, state)

    def _run_merge(self, node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
        if dead:
            self._send(node, node.dead_outputs, DEAD, state)
        else:
            value, index = inputs
            self._send(node, (value, node.merge_indices[index]), None, state)

    def _run_loopcond(self, node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
        self._forward(node, DEAD if dead else inputs[0], state)

    def _run_enter(self, node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
        child = self._child_frame(state, node)
        child.pending_enters -= 1
        value = DEAD if dead else inputs[0]
        if node.is_constant:
            child.invariants.append((node, value))
            for child_state in list(child.iterations.values()):
                self._forward(node, value, child_state)
        else:
            self._forward(node, value, child.iterations[0])
        if child.pending_enters == 0:
            oldest = child.iterations.get(child.oldest)
            if oldest is not None and oldest.outstanding == 0 and oldest.child_frames == 0:
                self._iteration_maybe_done(child)

    def _run_exit(self, node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
        frame = state.frame
        if dead:
            frame.dead_exits.add(node)
        else:
            frame.live_exits.add(node)
            self._send(node, (inputs[0],), None, frame.parent_state)

    def _run_next(self, node: Any, state: _Iteration, inputs: Any, dead: bool) -> None:
        if dead:
            return  # the loop has ended on this path: no next iteration
        frame = state.frame
        index = state.index + 1
        next_state = frame.iterations.get(index)
        if next_state is None:
            if index - frame.oldest >= frame.max_parallel:
                frame.deferred.append((node, inputs[0]))
                return
            next_state = self._new_iteration(frame, index)
        self._send(node, (inputs[0],), None, next_state)
