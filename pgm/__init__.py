"""Pure post-processing: factors, junction trees, belief propagation, mirror-descent estimation,
marginal queries and synthetic rows. Never sees private rows or privacy budgets."""

from .estimation import estimate, minimum_variance_total, potential_cliques
from .factor import Factor
from .inference import TreeEngine, brute_force_joint
from .junction_tree import (
    JunctionTree,
    build_junction_tree,
    greedy_order,
    maximal_cliques,
    model_size_mb,
    triangulate,
)
from .model import Model
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
