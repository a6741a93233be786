"""The engine's speed paths: BLAS thread control (`threads`), cached contraction plans
(`plans`), pairwise einsum contraction (`contract`), factored cliques (`factored`), and batched
split queries (`split_queries`). Each is checked against the plain computation it replaces."""
