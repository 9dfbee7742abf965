"""A child process that saves checkpoints with exactly the file protocol of `Saver.save`
(`CheckpointKeeper.save` around `h5_format.write_checkpoint`) but without importing JAX, so it
starts in a fraction of a second. Used by the crash-safety and concurrency tests:

    python saver_child.py DIRECTORY START COUNT [MAX_TO_KEEP [SIZE [WAIT]]]

saves steps START, START+1, ... (COUNT of them; 0: forever) as DIRECTORY/model-<step>.h5 with
variables w (SIZE x SIZE float32, all `step`), b (float64, all `-step`) and global_step, and a
random-number counter `step`. It prints "ready" when it has started; with WAIT=1 it then waits
for a line on stdin before its first save (so that two children start saving together).
"""

import os
import sys
import types

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def import_checkpoint_modules() -> None:
    """Makes `sluice.checkpoints.<module>` importable without running sluice/__init__.py (which
    imports JAX): the packages are stand-ins whose __path__ points at the real directories."""
    for name, path in [("sluice", "sluice"), ("sluice.checkpoints", "sluice/checkpoints")]:
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [os.path.join(REPO, path)]
            sys.modules[name] = module


def expected_arrays(step: int, size: int = 256) -> dict:
    import numpy as np

    return {
        "w": np.full((size, size), step, np.float32),
        "b": np.full([64], -step, np.float64),
        "global_step": np.int64(step),
    }


def main(directory: str, start: int, count: int, max_to_keep: int, size: int, wait: bool) -> None:
    import_checkpoint_modules()
    from sluice._tf1.checkpoints import checkpoint_names, h5_format, keeper

    saves = keeper.CheckpointKeeper(max_to_keep=max_to_keep)
    print("ready", flush=True)
    if wait:
        sys.stdin.readline()
    step = start
    while count == 0 or step < start + count:
        path = checkpoint_names.checkpoint_path(os.path.join(directory, "model"), step)
        arrays, counts = expected_arrays(step, size), {"dropout/random_uniform": step}
        saves.save(path, lambda: h5_format.write_checkpoint(path, arrays, step, counts))
        step += 1


if __name__ == "__main__":
    args = sys.argv[1:] + [None] * 6
    main(
        args[0],
        int(args[1]),
        int(args[2]),
        int(args[3] or 3),
        int(args[4] or 256),
        args[5] == "1",
    )
