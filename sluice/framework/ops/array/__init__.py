"""Array ops: shapes, casts and fills, layout, tile and broadcast, stack/concat/split/pad,
slicing, gather/where, scatter_nd, space/depth, unique, IdentityN, linspace and meshgrid.
The gradients of Fill, Tile, BroadcastTo, Pad, GatherV2 and SelectV2 sum with a reduction, a
higher family: they are registered in `math/array_grads.py`.
"""

from sluice.framework.ops.array import (  # noqa: F401  (imported for their registrations)
    array_ops,
    broadcast_ops,
    fill_ops,
    gather_ops,
    grid_ops,
    identity_n_ops,
    join_ops,
    scatter_nd_ops,
    slicing_ops,
    space_depth_ops,
    unique_ops,
)
