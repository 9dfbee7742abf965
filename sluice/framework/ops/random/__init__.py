"""Random draws and TF1's seed rules, more distributions and stateless draws, candidate
samplers.
"""

from sluice.framework.ops.random import (  # noqa: F401  (imported for their registrations)
    candidate_sampling_ops,
    random_dist_ops,
    random_ops,
    stateless_ops,
)
