"""AIM (McKenna, Mullins, Sheldon, Miklau 2022): adaptive select-measure-reconstruct under zCDP.

Budget: rho = cdp_rho(epsilon, delta). With T = 16 d initial rounds, every measurement uses
sigma = sqrt(T / (2 * 0.9 * rho)) and every selection eps = sqrt(8 * 0.1 * rho / T), i.e. a round
costs 1/(2 sigma^2) + eps^2/8 = rho / T. All 1-way marginals are measured first. A round that
would leave less than one more round's cost spends exactly the remainder (split 90/10) and is
the last. When the newly measured marginal moved by less than the expected noise magnitude
sqrt(2/pi) sigma n_r, the scale is annealed (sigma / 2, eps * 2).

Selection: candidate r scores q(r) = w_r (||x_r - x̂_r||_1 - sqrt(2/pi) sigma n_r) (sigma: the
scale about to be used), chosen by the exponential mechanism with sensitivity max w_r over the
candidates that pass the model-size filter (inside a current junction-tree node, or the
hypothetical model stays under max_model_size * rho_used / rho MB).

Every charge goes through one `Accountant`; the run asserts the ledger never exceeds rho.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Mapping, Sequence

import numpy as np

from marginals.mechanisms import exponential_mechanism, measure_counts
from marginals.privacy import BUDGET_RTOL, Accountant, cdp_rho
from marginals.randomness import noise_source
from marginals.source import RowSource, check_unweighted, is_rows
from pgm.estimation import estimate
from pgm.junction_tree import model_size_mb

from .release import Release
from .size_filter import filter_candidates
from .workload import Clique, all_k_way, candidates, normalize_workload

MEASURE_SHARE = 0.9  # of each round's budget; the rest pays for the selection
EXPECTED_L1 = math.sqrt(2 / math.pi)  # E|N(0, 1)|
# `pgm.estimate` settings a run may change; iterations, tolerance, warm start and loss weight are AIM's own.
ESTIMATOR_OPTIONS = ("stepsize", "step_growth", "armijo", "momentum", "resume_stepsize")


def round_scales(rho_round: float) -> tuple[float, float]:
    """(sigma, eps_select) that spend ``rho_round`` split 90% measurement / 10% selection."""
    sigma = math.sqrt(1.0 / (2 * MEASURE_SHARE * rho_round))
    eps = math.sqrt(8 * (1 - MEASURE_SHARE) * rho_round)
    return sigma, eps


def round_cost(sigma: float, eps: float) -> float:
    """zCDP cost of one round: a Gaussian measurement plus one exponential-mechanism selection."""
    return 0.5 / sigma**2 + eps**2 / 8


def plan_round(remaining: float, sigma: float, eps: float) -> tuple[float, float, bool]:
    """Scales for the next round; the last round (less than two rounds' budget left) spends the remainder."""
    if remaining < 2 * round_cost(sigma, eps):
        sigma, eps = round_scales(remaining)
        return sigma, eps, True
    return sigma, eps, False


def should_anneal(before: np.ndarray, after: np.ndarray, sigma: float) -> bool:
    """True when the measured marginal moved no more than the expected L1 norm of its noise."""
    return float(np.abs(after - before).sum()) <= EXPECTED_L1 * sigma * before.size


def _capped_iters(domain, cliques, most: int, least: int, work: float) -> int:
    """``most`` iterations, fewer when the model's cells x iterations would exceed ``work`` (never below ``least``)."""
    cells = model_size_mb(domain, cliques) * 2**20 / 8
    return int(min(most, max(least, work // max(cells, 1.0))))


class AIM:
    """The AIM mechanism; ``run(dataset)`` returns a `Release`.

    Args:
        epsilon, delta: the (epsilon, delta)-DP guarantee of the whole run.
        workload: (clique, weight) pairs; default all 2-way marginals with <= max_cells cells.
        max_model_size: cap on the junction-tree size in MB (reached when the budget is spent).
        max_iters / tol: mirror-descent iterations and relative tolerance per round.
        round_work: cap on a round's estimation work, in junction-tree cells x iterations: a
            round on a model of C cells runs at most max(min_iters, round_work / C) iterations.
        final_iters / final_tol / final_work: iterations, tolerance and work cap (cells x
            iterations, never below 50 iterations) of the final estimation.
        rounds: T, the initial number of rounds (default 16 x number of attributes).
        estimator_options: extra mirror-descent settings for every `pgm.estimate` call (keys in
            ESTIMATOR_OPTIONS, e.g. ``{"momentum": 0.0, "step_growth": 1.01}`` for mbi's rule).
        anneal_iters: when set, a round whose fit says "anneal" is fitted on to this many
            iterations in total (work-capped like a round) and the test is repeated before sigma
            is halved.
        insecure_seed: tests and benchmarks only. None (the default) draws all noise from the
            operating system's secure source; an int seeds a replayable generator, warns, and
            marks the release not private (the seed itself is never stored).
        exact_noise: exact discrete Gaussian measurements (default); False adds float Gaussian
            noise and is allowed only with ``insecure_seed`` (sampler benchmarks).
        progress: per-round lines on stderr.

    The defaults (25-iteration rounds, anneal confirmed at 100, an 80-iteration final fit) come
    from adult at eps = 1 (benchmarks/aim_adult.py, 6 seeds, float sampler): longer fits overfit
    the noisy measurements (final fit 4000 iterations: mean error 0.0536; 1000 with tol 1e-4:
    0.0529; 80: 0.0527), short unconfirmed rounds anneal too early (0.0528), and short rounds with
    confirmed annealing reach 0.0517.
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 1e-9,
        workload: Sequence | None = None,
        max_model_size: float = 80.0,
        max_iters: int = 25,
        tol: float | None = 1e-3,
        round_work: float = 2e8,
        min_iters: int = 10,
        final_iters: int = 80,
        final_tol: float | None = None,
        final_work: float = 5e8,
        rounds: int | None = None,
        max_cells: int = 10_000,
        loss_weight: str = "inverse_variance",
        estimator_options: Mapping[str, Any] | None = None,
        anneal_iters: int | None = 100,
        insecure_seed: int | None = None,
        exact_noise: bool = True,
        progress: bool = False,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.workload = workload
        self.max_model_size = max_model_size
        self.max_iters = max_iters
        self.tol = tol
        self.round_work = round_work
        self.min_iters = min_iters
        self.final_iters = final_iters
        self.final_tol = final_tol
        self.final_work = final_work
        self.rounds = rounds
        self.max_cells = max_cells
        self.loss_weight = loss_weight
        self.estimator_options = estimator_options
        self.anneal_iters = anneal_iters
        self.insecure_seed = insecure_seed
        self.exact_noise = exact_noise
        self.progress = progress

    def _log(self, message: str) -> None:
        if self.progress:
            print(message, file=sys.stderr, flush=True)

    def _config(self, workload) -> dict:
        return {
            "mechanism": "AIM",
            "epsilon": float(self.epsilon),
            "delta": float(self.delta),
            "max_model_size": float(self.max_model_size),
            "max_iters": int(self.max_iters),
            "tol": self.tol,
            "round_work": float(self.round_work),
            "min_iters": int(self.min_iters),
            "final_iters": int(self.final_iters),
            "final_tol": self.final_tol,
            "final_work": float(self.final_work),
            "rounds": self.rounds,
            "max_cells": int(self.max_cells),
            "loss_weight": self.loss_weight,
            "estimator_options": dict(sorted((self.estimator_options or {}).items())),
            "anneal_iters": self.anneal_iters,
            "exact_noise": bool(self.exact_noise),
            "workload": [[list(c), w] for c, w in workload],
        }

    def run(self, dataset: RowSource) -> Release:
        """Run AIM on ``dataset`` and return the release (measurements, model, ledger, log)."""
        if not is_rows(dataset):
            raise TypeError(
                f"AIM.run needs private rows (a marginals.Dataset or DaskDataset), got {type(dataset).__name__}"
            )
        check_unweighted(dataset, "AIM.run")  # weighted counts: sensitivity 1 would not hold
        if not (self.max_model_size > 0):
            raise ValueError(f"max_model_size must be > 0 MB, got {self.max_model_size}")
        unknown = sorted(set(self.estimator_options or {}) - set(ESTIMATOR_OPTIONS))
        if unknown:
            raise ValueError(f"estimator_options: unknown key(s) {unknown}; allowed: {list(ESTIMATOR_OPTIONS)}")
        domain = dataset.domain
        workload = normalize_workload(
            domain, self.workload if self.workload is not None else all_k_way(domain, 2, self.max_cells)
        )
        rho = cdp_rho(self.epsilon, self.delta)
        ledger = Accountant(rho, delta=self.delta)
        if not self.exact_noise and self.insecure_seed is None:
            raise ValueError("exact_noise=False (float Gaussian noise) is for benchmarks only: it needs insecure_seed")
        rng = noise_source(self.insecure_seed)
        start = time.perf_counter()

        cand_weights = candidates(domain, workload)
        oneway = [(a,) for a in domain.attrs]
        cand_list = list(cand_weights)
        queries = cand_list + [c for c in oneway if c not in cand_weights]
        answers = dict(zip(queries, dataset.marginals(queries)))  # true answers, computed once

        T = self.rounds if self.rounds is not None else 16 * len(domain)
        if T < len(domain) + 1:
            raise ValueError(f"rounds must exceed the number of attributes ({len(domain)}), got {T}")
        sigma, eps = round_scales(rho / T)
        measurements = []
        for clique in oneway:
            measurements.append(measure_counts(
                answers[clique], clique, sigma, rng, ledger, label=f"init {clique[0]}", exact=self.exact_noise
            ))
        model = self._fit(domain, measurements, self.max_iters, self.tol)
        log: list[dict] = []
        self._log(
            f"AIM: eps={self.epsilon:g} delta={self.delta:g} rho={rho:.6g}, {len(cand_list)} candidates, "
            f"T={T}, sigma={sigma:.2f}; 1-way marginals measured ({100 * ledger.spent / rho:.1f}% of budget)"
        )
        terminate = False
        while not terminate:
            round_start = time.perf_counter()
            sigma, eps, terminate = plan_round(rho - ledger.spent, sigma, eps)
            rho_used = ledger.spent + round_cost(sigma, eps)
            size_limit = self.max_model_size * rho_used / rho
            allowed = self._filter(domain, model, cand_list, size_limit)
            estimates = model.marginals(allowed)
            penalty = EXPECTED_L1 * sigma
            scores = np.array(
                [
                    cand_weights[r] * (np.abs(answers[r] - est).sum() - penalty * est.size)
                    for r, est in zip(allowed, estimates)
                ]
            )
            sensitivity = max(cand_weights[r] for r in allowed)
            choice = allowed[exponential_mechanism(scores, eps, sensitivity, rng, ledger, label=f"select round {len(log) + 1}")]
            measurements.append(
                measure_counts(answers[choice], choice, sigma, rng, ledger, label=f"round {len(log) + 1}", exact=self.exact_noise)
            )
            before = estimates[allowed.index(choice)]
            if terminate:  # the final estimation below fits the last measurement; no annealing test needed
                anneal, iterations, size_mb = False, 0, model_size_mb(domain, model.cliques + (choice,))
            else:
                budget = self._round_iters(domain, model.cliques + (choice,))
                model = self._fit(domain, measurements, budget, self.tol, warm_start=model)
                iterations = model.info["iterations"]
                anneal = should_anneal(before, model.marginals([choice])[0], sigma)
                if anneal and iterations >= budget and budget < self.max_iters:
                    # The work cap may have stopped the fit before the new marginal settled: an
                    # under-converged fit looks "uninformative" and would anneal too early.
                    model = self._fit(domain, measurements, self.max_iters - budget, self.tol, warm_start=model)
                    iterations += model.info["iterations"]
                    anneal = should_anneal(before, model.marginals([choice])[0], sigma)
                confirm = 0 if self.anneal_iters is None else self._round_iters(domain, model.cliques, self.anneal_iters)
                if anneal and iterations < confirm:
                    # Short round fits steer selection well but make the annealing test noisy:
                    # confirm an "anneal" with a longer (work-capped) fit before halving sigma.
                    model = self._fit(domain, measurements, confirm - iterations, self.tol, warm_start=model)
                    iterations += model.info["iterations"]
                    anneal = should_anneal(before, model.marginals([choice])[0], sigma)
                size_mb = model.size_mb
            log.append(
                {
                    "round": len(log) + 1,
                    "clique": list(choice),
                    "sigma": sigma,
                    "eps_select": eps,
                    "rho_used": ledger.spent,
                    "candidates": len(allowed),
                    "model_size_mb": size_mb,
                    "iterations": iterations,
                    "annealed": anneal,
                    # no wall time: the exact selection's running time depends on the private scores
                }
            )
            self._log(
                f"round {len(log):3d}  budget {100 * ledger.spent / rho:5.1f}%  {','.join(choice):<40} "
                f"sigma={sigma:8.2f}  model {size_mb:6.2f} MB  {time.perf_counter() - round_start:.2f}s"
                + ("  (anneal)" if anneal else "")
            )
            if anneal:
                sigma, eps = sigma / 2, eps * 2
        final_iters = self._final_iters(domain, tuple(m.clique for m in measurements))
        model = self._fit(domain, measurements, final_iters, self.final_tol, warm_start=model)
        assert ledger.spent <= rho * (1 + BUDGET_RTOL), "privacy ledger exceeds the budget"
        self._log(f"AIM done: {len(log)} rounds, {time.perf_counter() - start:.1f}s, model {model.size_mb:.2f} MB")
        return Release(
            domain=domain,
            measurements=measurements,
            model=model,
            ledger=ledger,
            rounds=log,
            config=self._config(workload),
            private=rng.private,
        )

    def _fit(self, domain, measurements, iters: int, tol: float | None, warm_start=None):
        """One warm-started `pgm.estimate` call with this run's loss weight and estimator options."""
        return estimate(
            domain, measurements, iters=iters, tol=tol, warm_start=warm_start, loss_weight=self.loss_weight,
            **(self.estimator_options or {}),
        )

    def _round_iters(self, domain, cliques, most: int | None = None) -> int:
        """Iterations for one round: ``most`` (default max_iters), fewer on big models (at most round_work cell-iterations)."""
        return _capped_iters(domain, cliques, self.max_iters if most is None else most, self.min_iters, self.round_work)

    def _final_iters(self, domain, cliques) -> int:
        """Iterations of the final fit: final_iters, fewer on big models (at least 50)."""
        return _capped_iters(domain, cliques, self.final_iters, 50, self.final_work)

    @staticmethod
    def _filter(domain, model, cand_list: list[Clique], size_limit: float) -> list[Clique]:
        """Candidates inside a junction-tree node (free), or whose hypothetical model fits ``size_limit``."""
        return filter_candidates(domain, model, cand_list, size_limit)
