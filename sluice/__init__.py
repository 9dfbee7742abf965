"""sluice: a Keras-style training framework on a TensorFlow-1.x-style dataflow graph.

`import sluice as sl`, then write TF1 graph code with `sl.` in place of `tf.`, or Keras code
with `sl.layers`, `sl.models`, `sl.optimizers`. Every public name is declared where it is
defined (`@export("nn.relu")`, see sluice/_export.py); importing sluice builds the namespaces
(`sl`, `sl.nn`, `sl.train`, `sl.layers`, ...) from those declarations (sluice/_namespaces.py).
"""

from sluice import _host_memory

_host_memory.tune()  # before JAX starts its threads: see sluice/_host_memory.py

from sluice import _namespaces  # noqa: E402
from sluice._version import __version__ as __version__  # noqa: E402

_namespaces.build(__name__)
