"""Training on several devices and processes, modelled on `keras.distribution`.

    sl.distribution.initialize()                      # several processes: join them first
    distribution = sl.distribution.DataParallel()     # every device of every process
    sl.distribution.set_distribution(distribution)    # or `with distribution.scope():`
    model.fit(x, y, batch_size=128)                   # each step's batch split over devices

`ModelParallel(layout_map=...)` splits chosen variables over a "model" axis of a 2-D mesh.
The TF1-style API takes the same object: `sl.Session(config=sl.SessionConfig(distribution=d))`.
See README, "Several devices and machines".
"""

from sluice._keras.distribution.distributions import (
    DataParallel,
    Distribution,
    ModelParallel,
    distribution,
    set_distribution,
)
from sluice._keras.distribution.mesh import DeviceMesh, LayoutMap, TensorLayout, list_devices
from sluice._keras.distribution.runtime import (
    barrier,
    initialize,
    is_chief,
    process_count,
    process_index,
)

__all__ = [
    "DataParallel",
    "DeviceMesh",
    "Distribution",
    "LayoutMap",
    "ModelParallel",
    "TensorLayout",
    "barrier",
    "distribution",
    "initialize",
    "is_chief",
    "list_devices",
    "process_count",
    "process_index",
    "set_distribution",
]
