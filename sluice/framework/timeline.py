"""`Timeline`: a traced run's `step_stats` as a Chrome trace (TF1's `client.timeline`).

    options = sl.RunOptions(trace_level=sl.RunOptions.FULL_TRACE)
    metadata = sl.RunMetadata()
    sess.run(train_op, options=options, run_metadata=metadata)
    trace = sl.client.timeline.Timeline(metadata.step_stats)
    with open("timeline.json", "w") as f:
        f.write(trace.generate_chrome_trace_format())

Open the file in chrome://tracing or https://ui.perfetto.dev: one process per device, one
complete event per op execution, with its name, type, loop frame and iteration.
"""

from __future__ import annotations

import json
from typing import Any

from sluice._export import export


@export("client.timeline.Timeline")
class Timeline:
    def __init__(self, step_stats: Any, graph: Any = None):
        if not hasattr(step_stats, "dev_stats"):
            raise TypeError(
                "Timeline needs a RunMetadata's step_stats (run with "
                f"RunOptions(trace_level=FULL_TRACE)), got {step_stats!r}."
            )
        self._step_stats = step_stats

    def generate_chrome_trace_format(
        self, show_dataflow: bool = True, show_memory: bool = False
    ) -> str:
        """The trace as Chrome's JSON trace-event format. `show_dataflow` and `show_memory`
        are accepted for TF1's signature (sluice records no flow or allocator events)."""
        events: list[dict] = []
        for pid, dev in enumerate(self._step_stats.dev_stats):
            events.append(
                {
                    "ph": "M",
                    "name": "process_name",
                    "pid": pid,
                    "args": {"name": f"{dev.device} Compute"},
                }
            )
            for node in dev.node_stats:
                events.append(
                    {
                        "ph": "X",
                        "cat": "Op",
                        "name": node.op or node.node_name,
                        "pid": pid,
                        "tid": 0,
                        "ts": node.all_start_micros,
                        "dur": node.all_end_rel_micros,
                        "args": {
                            "name": node.node_name,
                            "op": node.op,
                            "frame": node.frame_name,
                            "iteration": node.iter_num,
                        },
                    }
                )
        return json.dumps({"traceEvents": events}, indent=None)
