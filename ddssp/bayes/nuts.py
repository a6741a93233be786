"""NUTS chains as one compiled JAX function of (key, starting points, data): compiled once, reused.

numpyro's `MCMC` re-traces and re-compiles its sampling loop on every ``run`` (its loop body is
wrapped in a fresh ``jit`` per call, and its model initialisation compiles a search for valid
starting points each time), which cost ~40 s of CPU per posterior fit while the draws themselves
take a few seconds. `compiled_chains` builds the same algorithm -- numpyro's `NUTS` kernel (dense
mass matrix, windowed adaptation during the warm-up, ``target_accept_prob``) on the model's
potential energy -- inside a single `jax.jit`, with the data as traced arguments: one compilation
per model, settings and array shapes, whatever the data and the seed.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

#: target acceptance probability of the step-size adaptation (both NUTS paths of `posterior.run_nuts`).
TARGET_ACCEPT = 0.85


def compiled_chains(model: Callable[..., None], num_warmup: int, num_samples: int, num_chains: int,
                    chain_method: str) -> Callable[[Any, dict, dict], dict]:  # fmt: skip
    """A jitted f(rng_key, init_params, data) -> {site: (chains, draws, ...)} of constrained draws
    (deterministic sites included). ``init_params``: unconstrained starts with a leading chain axis;
    chains run vectorized (``"vectorized"``) or one after another (``"sequential"``)."""
    import jax
    from numpyro.infer import NUTS
    from numpyro.infer.util import constrain_fn, potential_energy

    if chain_method not in ("vectorized", "sequential"):
        raise ValueError(f"chain_method must be 'vectorized' or 'sequential' here, got {chain_method!r}")

    def run(rng_key: Any, init_params: dict, data: dict) -> dict:
        kernel = NUTS(potential_fn=functools.partial(potential_energy, model, (), data),
                      target_accept_prob=TARGET_ACCEPT, dense_mass=True)  # fmt: skip

        def chain(key: Any, start: dict) -> dict:
            state = kernel.init(key, num_warmup, start)  # adaptation runs while state.i < num_warmup
            state = jax.lax.fori_loop(0, num_warmup, lambda _, s: kernel.sample(s, (), {}), state)

            def step(s: Any, _: Any) -> tuple[Any, Any]:
                s = kernel.sample(s, (), {})
                return s, s.z

            _, draws = jax.lax.scan(step, state, None, length=num_samples)
            return jax.vmap(lambda z: constrain_fn(model, (), data, z, return_deterministic=True))(draws)

        keys = jax.random.split(rng_key, num_chains)
        if chain_method == "vectorized":
            return jax.vmap(chain)(keys, init_params)
        return jax.lax.map(lambda pair: chain(*pair), (keys, init_params))

    return jax.jit(run)


def start_check(model: Callable[..., None]) -> Callable[[dict, dict], tuple[dict, Any]]:
    """A jitted f(values, data) -> (values unconstrained, whether the potential energy and its gradient
    are finite there): the test a chain's starting point must pass."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer.util import potential_energy, unconstrain_fn

    def check(values: dict, data: dict) -> tuple[dict, Any]:
        start = unconstrain_fn(model, (), data, values)
        energy, grad = jax.value_and_grad(lambda u: potential_energy(model, (), data, u))(start)
        finite = [jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grad)]
        return start, jnp.isfinite(energy) & jnp.all(jnp.stack(finite))

    return jax.jit(check)

