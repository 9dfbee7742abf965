"""State cells: a value that outlives graphs, used by any number of them through mirrors.

A Keras layer's weight must be shared by every model that calls the layer, whatever graph each
model builds in (a GAN's generator in its own model and in the combined one, a distiller's
teacher). TF1's rule (a variable's value belongs to its session) cannot give that, so such a
weight is a `StateCell`: one value, and in each graph that uses it a *mirror*, an ordinary graph
`Variable` (VarHandleOp and friends) that the engines, pruning and graph_def export see as any
other. A graph Variable that has a cell, used inside `with g.as_default()` of another graph `g`,
reads and assigns its mirror in `g`, so layer code such as `ops.matmul(x, self.kernel)` works in
whichever graph the layer is called in (a layer's call enters its inputs' graph).

Where the value is: in the variable table of one *bound* session (`SessionConfig(
keras_state=True)`, which Keras's per-graph runtime sessions set), under that graph's mirror's
name, or in no table yet. Before a bound session runs, `gather` moves every cell its graph
mirrors into its table: a dict pop and insert, never a copy, so the compiled engine's donation
of variable buffers stays as it was. A global move counter makes the check free when nothing
moved since the session's last run. A user's `Session` is not bound: there, mirrors are plain
per-session variables, as TF1 code expects (`global_variables_initializer()` per session).

    >>> g1, g2 = sl.Graph(), sl.Graph()
    >>> with g1.as_default():
    ...     v = sl.Variable(1.0, name="w")
    ...     set_five = v.assign(5.0)
    >>> cell = attach(v, StateCell("w", v.dtype, v.shape, lambda: 1.0))
    >>> with g2.as_default():
    ...     doubled = v * 2.0  # reads the mirror of v in g2
    >>> config = sl.SessionConfig(keras_state=True)
    >>> s1, s2 = sl.Session(graph=g1, config=config), sl.Session(graph=g2, config=config)
    >>> _ = s1.run(v.initializer); s1.run(set_five).item()
    5.0
    >>> s2.run(doubled).item()  # the value moved from s1's table to s2's
    10.0
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

from sluice.framework.ir.graph import Graph
from sluice.framework.ir.tensor_shape import TensorShape

_lock = threading.RLock()  # moves and homes; held briefly, never while a step runs
_moves = 0  # bumped by every change of any cell's home
# Kept in each graph's `attachments` (freed with the graph, which a weak map keyed by the graph
# would not do: its mirrors refer to it): {mirror's shared_name: cell} and {cell: mirror}.
_BOUND = "state_cells.bound"
_MIRRORS = "state_cells.mirrors"
_homeless = 0  # cells with a mirror but no value anywhere (adopt has work only then)
_host_access: Any = None  # how values are read and written outside graphs (set by Keras)
_managed: weakref.WeakSet[Graph] = weakref.WeakSet()  # graphs of Keras objects (see `manage`)


class StateCell:
    """One value shared by the graphs that mirror it (see the module docstring).

    Mirrors are made by `sluice.framework.variables.mirror` (`Variable.graph_variable`).

    Args:
      path: the name of the value ("dense/kernel"); each mirror is named by it, made unique in
        its graph only when another variable took the name there.
      dtype, shape: of the value.
      initial_value: a callable building, in the graph being entered, the initial value of a
        mirror (the first bound session that needs the value and finds none runs it).
      trainable: whether mirrors join their graph's TRAINABLE_VARIABLES collection.
      autocast: whether a read inside `variables.autocast_scope` is cast to its dtype.
    """

    def __init__(
        self,
        path: str,
        dtype: Any,
        shape: TensorShape,
        initial_value: Callable[[], Any],
        trainable: bool = True,
        autocast: bool = True,
    ):
        self.path = path
        self.dtype = dtype
        self.shape = shape
        self.trainable = trainable
        self.autocast = autocast
        self.initial_value = initial_value
        self._table: dict | None = None  # the table that holds the value, under _key
        self._key: str | None = None
        self._owner: Any = None  # the step lock of the session whose table it is
        self._counted_homeless = False

    # -- mirrors -------------------------------------------------------------------------------
    def mirror_in(self, g: Graph) -> Any:
        """The mirror in `g`, or None when the cell has none there."""
        return g.attachments.get(_MIRRORS, {}).get(self)

    # -- the value -----------------------------------------------------------------------------
    @property
    def has_value(self) -> bool:
        with _lock:
            return self._table is not None and self._key in self._table

    def _set_home(self, table: dict, key: str, owner: Any) -> None:
        global _moves, _homeless
        self._table, self._key, self._owner = table, key, owner
        if self._counted_homeless:
            self._counted_homeless = False
            _homeless -= 1
        _moves += 1

    def __repr__(self) -> str:
        return f"<StateCell {self.path} shape={self.shape} dtype={self.dtype.name}>"


def attach(variable: Any, cell: StateCell) -> StateCell:
    """Makes the existing graph `variable` the mirror of `cell` in its graph."""
    with _lock:
        if cell.mirror_in(variable.graph) is not None:
            raise ValueError(f"{cell} already has a mirror in the graph of {variable.name}.")
        _bind(variable, cell)
    return cell


def bind(variable: Any, cell: StateCell) -> Any:
    """Records a new graph `variable` (made by `variables.mirror`) as `cell`'s mirror."""
    return _bind(variable, cell)


def _bind(variable: Any, cell: StateCell) -> Any:
    global _homeless
    with _lock:
        variable._state_cell = cell
        attachments = variable.graph.attachments
        attachments.setdefault(_MIRRORS, {})[cell] = variable
        attachments.setdefault(_BOUND, {})[variable.op.get_attr("shared_name")] = cell
        if cell._table is None and not cell._counted_homeless:
            cell._counted_homeless = True
            _homeless += 1
    return variable


def _bound(g: Graph) -> dict[str, StateCell]:
    return g.attachments.get(_BOUND, {})


def cell_of(variable: Any) -> StateCell | None:
    """The cell a graph Variable mirrors, or None for a plain variable."""
    return getattr(variable, "_state_cell", None)


def bound_cells(g: Graph) -> dict[str, StateCell]:
    """{shared name of the mirror in `g`: cell}, for every cell mirrored in `g`."""
    return dict(_bound(g))


# -- bound sessions ---------------------------------------------------------------------------
def gather(g: Graph, table: dict, lock: Any, stamp: Any = None) -> tuple[Any, Any]:
    """Moves every cell mirrored in `g` that has a value into `table` (the variables of a bound
    session whose step lock is `lock`, held by the caller), under its mirror's name in `g`.

    A value is taken out of another session's table only while holding that session's lock, so
    never from under a step that runs (and may have donated it). Returns (stamp, busy): pass
    the stamp to the next call, which is then free when nothing moved in between; `busy` is a
    lock that another thread holds over a table a value must come from (None when all moved):
    the caller lets its own lock go, waits for that one, and calls again.
    """
    cells = _bound(g)
    if not cells:
        return None, None
    with _lock:
        if stamp == (_moves, len(cells)):
            return stamp, None
        for key, cell in list(cells.items()):
            if cell._table is table and cell._key == key:
                continue
            if cell._table is not None:
                source = cell._owner  # its step may have the value out (donated) right now
                if source is not None and not source.try_enter():
                    return None, source
                try:
                    if cell._key in cell._table:
                        table[key] = cell._table.pop(cell._key)
                finally:
                    if source is not None:
                        source.__exit__(None, None, None)
            if key in table:  # moved, or given a value here (initializer run, load, restore)
                cell._set_home(table, key, lock)
        return (_moves, len(cells)), None


def adopt(g: Graph, table: dict, lock: Any) -> None:
    """After a bound session's run: the cells of `g` that had no value anywhere and now have
    one in `table` (their initializer ran, or a Saver restored them) live there."""
    if not _homeless:
        return
    cells = _bound(g)
    if not cells:
        return
    with _lock:
        for key, cell in cells.items():
            if cell._counted_homeless and key in table:
                cell._set_home(table, key, lock)


# -- values outside graphs ------------------------------------------------------------------------
_slots: dict[str, Any] = {}  # the values of cells that live in no session: their own slots


def value_of(cell: StateCell) -> Any:
    """The cell's current value wherever it lives (taken under the step lock of the session
    whose table holds it, so never while a step has it out), or None when it has none."""
    while True:
        with _lock:
            table, key, owner = cell._table, cell._key, cell._owner
        if table is None:
            return None
        if owner is not None:
            owner.__enter__()
        try:
            with _lock:
                if cell._table is table and cell._key == key:  # not moved meanwhile
                    return table.get(key)
        finally:
            if owner is not None:
                owner.__exit__(None, None, None)


def set_value(cell: StateCell, value: Any) -> None:
    """Gives the cell `value`, kept in its own slot outside any session (the entry of the
    session that held it is dropped); the next bound session that uses the cell moves it into
    its table, as from any other home (see `gather`)."""
    key = f"slot:{id(cell)}"
    while True:
        with _lock:
            table, old_key, owner = cell._table, cell._key, cell._owner
        if owner is not None:
            owner.__enter__()
        try:
            with _lock:
                if cell._table is not table or cell._key != old_key:
                    continue  # moved meanwhile: again
                if table is not None and table is not _slots:
                    table.pop(old_key, None)
                if key not in _slots:
                    weakref.finalize(cell, _slots.pop, key, None)
                _slots[key] = value
                cell._set_home(_slots, key, None)
                return
        finally:
            if owner is not None:
                owner.__exit__(None, None, None)


def set_host_access(access: Any) -> None:
    """Registers how a cell's value is read and written outside any graph: an object with
    `manages(graph) -> bool`, `read(variable) -> ndarray` and `write(variable, value)`. Keras's
    runtime registers itself (it knows which session to initialise a value in)."""
    global _host_access
    _host_access = access


def manage(graph: Graph) -> None:
    """Marks `graph` as a Keras object's (a model's, an optimizer's state): its cells' values
    are read and written outside graphs (`v.numpy()`, `v.value`, `v.assign(array)`) from the
    start, where a TF1 program's variables build ops for its own session."""
    _managed.add(graph)


def host_access(variable: Any) -> Any:
    """The registered access when `variable` is a Keras weight whose values Keras manages (it
    has a value in a bound session, or its graph is a Keras object's or has a Keras runtime),
    else None: a TF1 program's variables are read and written by running ops in its own
    session."""
    cell = cell_of(variable)
    if cell is None or _host_access is None:
        return None
    if cell.has_value or variable.graph in _managed or _host_access.manages(variable.graph):
        return _host_access
    return None
