"""Discretization specs: how raw columns become coded attributes (`columns`: one column's rules;
`grid`, `tree`, `density`: the public tree over the number line, a numeric column's DP
histogram on it, bin edges and in-bin draws from it; `public`: drafts and gaps; `discretize`: the `Discretizer`), and
`infer`: completing a draft from the private rows under DP, on the caller's ledger."""

from .discretize import Discretizer
from .infer import SpecInferenceWarning, infer_spec
from .public import draft_spec, spec_gaps

__all__ = ["Discretizer", "SpecInferenceWarning", "draft_spec", "infer_spec", "spec_gaps"]
