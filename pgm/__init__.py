"""Pure post-processing: factors, junction trees, belief propagation, mirror-descent estimation,
marginal queries and synthetic rows. Never sees private rows or privacy budgets."""
