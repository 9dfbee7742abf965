"""`Scaffold` (TF1 `tf.train.Scaffold`): the init, ready, local-init, summary ops and the Saver
that a monitored session needs, picked from the graph's collections or built once.

`finalize()` fills in whatever was not given, in this order, then finalizes the graph:

    init_op                  INIT_OP collection, else global_variables_initializer()
    ready_op                 READY_OP, else report_uninitialized_variables()      (global+local)
    ready_for_local_init_op  READY_FOR_LOCAL_INIT_OP, else report_uninitialized_variables(
                             global_variables())
    local_init_op            LOCAL_INIT_OP, else group(local_variables_initializer(),
                             tables_initializer())
    summary_op               SUMMARY_OP, else sl.summary.merge_all() (None without summaries)
    saver                    the one Saver of SAVERS, else Saver(allow_empty=True)

A built default is added to its collection, so a second Scaffold of the graph reuses it.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from sluice._export import export
from sluice._tf1.cells.variable_collections import tables_initializer
from sluice._tf1.checkpoints.saver import Saver
from sluice._tf1.summary import ops as summary
from sluice.framework.ir import graph as graph_lib
from sluice.framework.ir.graph import GraphKeys
from sluice.framework.ops.core import core_ops
from sluice.framework.variable_updates import report_uninitialized_variables
from sluice.framework.variables import (
    global_variables,
    global_variables_initializer,
    local_variables_initializer,
)

_logger = logging.getLogger("sluice")


@export("train.Scaffold")
class Scaffold:
    """The pieces of a monitored session's set-up; anything not given is picked or built by
    `finalize()` (see the module docstring).

    Args:
      init_op: the op that initializes variables when there is no checkpoint.
      init_feed_dict: feeds for init_op.
      init_fn: called as `init_fn(scaffold, session)` after init_op (e.g. to load pre-trained
        weights).
      ready_op: a 1-D tensor of the names of uninitialized variables; empty means ready.
      ready_for_local_init_op: the same, checked before local_init_op runs.
      local_init_op: runs in every new session, restored or not (local variables, tables).
      summary_op: the summaries a SummarySaverHook of this scaffold writes.
      saver: the Saver that restores and saves.
      copy_from_scaffold: a Scaffold whose pieces fill in those not given here.

    Raises:
      TypeError: copy_from_scaffold is not a Scaffold.
    """

    def __init__(
        self,
        init_op: Any = None,
        init_feed_dict: dict | None = None,
        init_fn: Callable[["Scaffold", Any], None] | None = None,
        ready_op: Any = None,
        ready_for_local_init_op: Any = None,
        local_init_op: Any = None,
        summary_op: Any = None,
        saver: Any = None,
        copy_from_scaffold: "Scaffold | None" = None,
    ):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            base = copy_from_scaffold
            init_op = _first_given(init_op, base.init_op)
            init_feed_dict = _first_given(init_feed_dict, base.init_feed_dict)
            init_fn = _first_given(init_fn, base._user_init_fn)
            ready_op = _first_given(ready_op, base.ready_op)
            ready_for_local_init_op = _first_given(
                ready_for_local_init_op, base.ready_for_local_init_op
            )
            local_init_op = _first_given(local_init_op, base.local_init_op)
            summary_op = _first_given(summary_op, base.summary_op)
            saver = _first_given(saver, base.saver)
        self._user_init_fn = init_fn
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> "Scaffold":
        """Picks or builds every missing piece, then finalizes the default graph.

        Raises:
          RuntimeError: a collection holds more than one candidate (pass the one to use).
        """
        if self._init_op is None:
            self._init_op = self.get_or_default(
                "init_op", GraphKeys.INIT_OP, global_variables_initializer
            )
        if self._ready_op is None:
            self._ready_op = self.get_or_default(
                "ready_op", GraphKeys.READY_OP, report_uninitialized_variables
            )
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = self.get_or_default(
                "ready_for_local_init_op",
                GraphKeys.READY_FOR_LOCAL_INIT_OP,
                lambda: report_uninitialized_variables(global_variables()),
            )
        if self._local_init_op is None:
            self._local_init_op = self.get_or_default(
                "local_init_op", GraphKeys.LOCAL_INIT_OP, self.default_local_init_op
            )
        if self._summary_op is None:
            self._summary_op = self.get_or_default(
                "summary_op", GraphKeys.SUMMARY_OP, summary.merge_all
            )
        if self._saver is None:
            self._saver = _saver_or_default()
        graph_lib.get_default_graph().finalize()
        _logger.info("Graph was finalized.")
        return self

    @property
    def init_fn(self) -> Callable[[Any], None] | None:
        """init_fn bound to this scaffold: called as `init_fn(session)`."""
        if self._user_init_fn is None:
            return None
        return lambda session: self._user_init_fn(self, session)

    @property
    def init_op(self) -> Any:
        return self._init_op

    @property
    def init_feed_dict(self) -> dict | None:
        return self._init_feed_dict

    @property
    def ready_op(self) -> Any:
        return self._ready_op

    @property
    def ready_for_local_init_op(self) -> Any:
        return self._ready_for_local_init_op

    @property
    def local_init_op(self) -> Any:
        return self._local_init_op

    @property
    def summary_op(self) -> Any:
        return self._summary_op

    @property
    def saver(self) -> Any:
        return self._saver

    @staticmethod
    def get_or_default(
        arg_name: str, collection_key: str, default_constructor: Callable[[], Any]
    ) -> Any:
        """The one item of `collection_key`, else `default_constructor()` (added to it)."""
        elements = graph_lib.get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(
                    f'More than one item in the collection "{collection_key}". Please indicate '
                    "which one to use by passing it to the sl.train.Scaffold constructor as:  "
                    f"sl.train.Scaffold({arg_name}=item to use)"
                )
            return elements[0]
        op = default_constructor()
        if op is not None:
            graph_lib.add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op() -> Any:
        """group(local_variables_initializer(), tables_initializer())."""
        return core_ops.group(local_variables_initializer(), tables_initializer())


def _first_given(value: Any, fallback: Any) -> Any:
    return value if value is not None else fallback  # tensors have no truth value


def _saver_or_default() -> Any:
    """The graph's one Saver (SAVERS collection), else a new one over all global variables."""
    savers = graph_lib.get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(
                f"More than one item in collection {GraphKeys.SAVERS}. Please "
                "indicate which one to use by passing it to the constructor."
            )
        return savers[0]
    return Saver(allow_empty=True)  # a Saver adds itself to SAVERS
