"""The module path a saved file names for a class or function sluice defines.

Issue 26 moved the implementation into sluice/_keras and sluice/_tf1 without changing the
public names; files written before (a `.keras` config's "module" of a class with no Keras
public path, an ApplyUpdates op's optimizer class in a graph_def) name the modules as they were,
`sluice.layers.core` for what is now `sluice._keras.layers.core`. Writers go through
`saved_module`, so files do not change and files written before still load.

>>> saved_module("sluice._keras.layers.core")
'sluice.layers.core'
>>> saved_module("my_project.layers")
'my_project.layers'
"""

_PRIVATE_PREFIXES = ("sluice._keras.", "sluice._tf1.")


def saved_module(module: str) -> str:
    """`module` as files name it: without the `_keras`/`_tf1` of sluice's implementation."""
    for prefix in _PRIVATE_PREFIXES:
        if module.startswith(prefix):
            return "sluice." + module[len(prefix) :]
    return module
