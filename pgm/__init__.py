"""Pure post-processing of released marginals: it never sees private rows or privacy budgets.

- The model core (`factor`, `junction_tree`, `inference`, `calibration`, `estimation`,
  `queries`, `model`, `sampling`) fits a graphical model to noisy marginals by mirror descent
  over a junction tree and answers marginal queries and synthetic rows from it; `conditional`
  (with `row_evidence`) draws rows conditioned on evidence: one dict for every row, or a table
  of given cells, one row per given row.
- `kernels/` holds the speed paths the core runs on (compiled plans, factored nodes,
  contractions, split queries, threads): they change how fast it computes, never what.
- `reference` holds the plain textbook belief propagation and the brute-force joint, which the
  tests hold the fast engine to.
"""

from .estimation import estimate, minimum_variance_total, potential_cliques
from .factor import Factor
from .inference import TreeEngine
from .junction_tree import (
    JunctionTree,
    build_junction_tree,
    greedy_order,
    maximal_cliques,
    model_size_mb,
    triangulate,
)
from .model import Model
from .reference import brute_force_joint
from .sampling import sample_rows

__all__ = [
    "Factor",
    "JunctionTree",
    "Model",
    "TreeEngine",
    "brute_force_joint",
    "build_junction_tree",
    "estimate",
    "greedy_order",
    "maximal_cliques",
    "minimum_variance_total",
    "model_size_mb",
    "potential_cliques",
    "sample_rows",
    "triangulate",
]
