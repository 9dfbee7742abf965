"""What a traced run records (TF1's `RunMetadata.step_stats`): when each op ran, per device.

A run with `RunOptions(trace_level=RunOptions.FULL_TRACE)` fills `run_metadata.step_stats` with
one `DeviceStepStats` per device and one `NodeExecStats` per op execution (an op in a loop body
once per iteration), in TF1's field names, so code that reads them (or `sl.client.timeline`)
runs unchanged.
"""

from __future__ import annotations

import dataclasses
import threading


@dataclasses.dataclass
class NodeExecStats:
    node_name: str
    all_start_micros: int  # since the epoch, as TF1
    op_start_rel_micros: int
    op_end_rel_micros: int
    all_end_rel_micros: int
    timeline_label: str  # "name = Type(inputs)", as TF1 writes it
    thread_id: int
    op: str = ""  # the op type
    frame_name: str = ""  # the while-loop frame it ran in ("" at the top level)
    iter_num: int = 0


@dataclasses.dataclass
class DeviceStepStats:
    device: str
    node_stats: list[NodeExecStats] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class StepStats:
    dev_stats: list[DeviceStepStats] = dataclasses.field(default_factory=list)


def device_step_stats(device: str, trace: list, epoch_offset_ns: int) -> DeviceStepStats:
    """Turns an executor's trace (`(node, frame, iteration, start ns, end ns)` on the
    perf_counter clock, see `Executor`) into TF1's records; `epoch_offset_ns` moves perf_counter
    times onto the epoch."""
    thread = threading.get_ident()
    stats = DeviceStepStats(device)
    for node, frame, iteration, start, end in trace:
        op = node.op
        duration = max(0, (end - start) // 1000)
        inputs = ", ".join(t.name for t in op.inputs)
        stats.node_stats.append(
            NodeExecStats(
                node_name=op.name,
                all_start_micros=(start + epoch_offset_ns) // 1000,
                op_start_rel_micros=0,
                op_end_rel_micros=duration,
                all_end_rel_micros=duration,
                timeline_label=f"{op.name} = {op.type}({inputs})",
                thread_id=thread,
                op=op.type,
                frame_name=frame,
                iter_num=iteration,
            )
        )
    return stats
