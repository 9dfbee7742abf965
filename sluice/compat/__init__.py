"""`sl.compat.v1`: the TF1 surface under the name TF 1.15+ code imports it by.

sluice's top level *is* the TF1 API, so `v1` is the `sluice` module itself: `tf.compat.v1.`
code runs with `import sluice as tf`, and `sl.compat.v1.placeholder is sl.placeholder`.

>>> import sluice as tf
>>> tf.compat.v1.placeholder is tf.placeholder
True
"""

import sluice as v1

__all__ = ["v1"]
