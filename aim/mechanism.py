"""AIM (McKenna, Mullins, Sheldon, Miklau 2022): adaptive select-measure-reconstruct under zCDP.

Budget: rho = cdp_rho(epsilon, delta). With T = 16 d initial rounds, every measurement uses
sigma = sqrt(T / (2 * 0.9 * rho)) and every selection eps = sqrt(8 * 0.1 * rho / T), i.e. a round
costs 1/(2 sigma^2) + eps^2/8 = rho / T. All 1-way marginals are measured first. A round that
would leave less than one more round's cost spends exactly the remainder (split 90/10) and is
the last. When the newly measured marginal moved by less than the expected noise magnitude
sqrt(2/pi) sigma n_r, the scale is annealed (sigma / 2, eps * 2).

Targets (`aim.targets`): with ``targets`` the initialisation also measures every (attribute,
target) pair with ``target_share`` of rho (default: `aim.targets.default_share`, lowered to
`aim.targets.needed_share` when less suffices), the rounds'
scales are planned on the remaining (1 - share) rho (sigma = sqrt(T / (2 * 0.9 * (1 - share) rho))),
and the default workload is `aim.targets.target_workload`.

Selection: candidate r scores q(r) = w_r (||x_r - x̂_r||_1 - sqrt(2/pi) sigma n_r) (sigma: the
scale about to be used), chosen by the exponential mechanism with sensitivity max w_r over the
candidates that pass the model-size filter (inside a current junction-tree node, or the
hypothetical model stays under max_model_size * rho_used / rho MB).

Person-level privacy (``unit``, ``max_rows_per_unit`` = k; `marginals.units`): each unit keeps at
most k rows before anything is counted; one unit then moves a count marginal by at most k in L1
and L2, so every measurement's sigma above is k times larger (charged with sensitivity k), and a
score's sensitivity is k max w_r. The 1-way, target-pair and round measurements and the
selections are the only mechanisms reading rows; annealing and the noisy total are post-processing.

Every charge goes through one `Accountant`; the run checks that the ledger never exceeds rho.

Public rules (``constraints``, `marginals.rules`) cost nothing: every fit puts -inf on the cells
they forbid (their cliques join the model's, so the size filter counts them) and no selection,
measurement or sensitivity changes.

Structure: `AIM.run` = `_initialise` (workload, budget, true answers, the 1-way measurements and a
first fit) -> rounds (`_round`: plan the scales, filter, `_select` = score + exponential mechanism,
measure, `_refit` + annealing test, anneal) -> `_finish` (the final fit). Everything a run carries
from round to round lives in one `_RunState`; the hyperparameters in one `AIMConfig`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from marginals.dataset import Dataset
from marginals.domain import Domain
from marginals.measurement import Measurement
from marginals.mechanisms import exponential_mechanism, measure_counts
from marginals.privacy import BUDGET_RTOL, Accountant, BudgetExceeded, cdp_rho
from marginals.randomness import RandomSource, noise_source
from marginals.rules import compile_rules
from marginals.source import RowSource, check_unweighted, is_rows
from marginals.units import bound_dataset
from pgm.estimation import estimate
from pgm.junction_tree import model_size_mb
from pgm.kernels.blas import one_blas_thread
from pgm.model import Model

from .analysis import DEFAULT_SHARE as DEFAULT_ANALYSIS_SHARE
from .analysis import check_plan, run_analysis
from .config import DEFAULT_DELTA, ESTIMATOR_OPTIONS, AIMConfig
from .progress import RunProgress
from .release import Release
from .release_config import build_config
from .schedule import (
    EXPECTED_L1,
    _capped_iters,
    _l1_distances,
    check_ledger,
    plan_round,
    round_cost,
    round_scales,
    should_anneal,
)
from .size_filter import filter_candidates
from .targets import check_targets_in, default_share, needed_share, noisy_total, pair_sigmas, target_pairs, target_workload
from .workload import Clique, Workload, all_k_way, candidates, normalize_workload

__all__ = ["AIM", "AIMConfig", "ESTIMATOR_OPTIONS", "plan_round", "round_cost", "round_scales", "should_anneal"]

@dataclass
class _RunState:
    """What one run carries from round to round. ``answers`` are the true (private) marginals:
    they feed the scores and the measurements only and never leave the run."""

    domain: Domain
    workload: Workload
    answers: dict[Clique, np.ndarray]
    cand_weights: dict[Clique, float]
    cand_list: list[Clique]
    planned_rounds: int
    ledger: Accountant
    rng: RandomSource
    sigma: float
    eps: float
    measurements: list[Measurement] = field(default_factory=list)
    model: Model | None = None
    log: list[dict] = field(default_factory=list)
    last: bool = False
    target_share: float = 0.0
    zeros: tuple = ()  # the public rules' structural zeros (`marginals.rules`), kept by every fit
    sensitivity: float = 1.0  # of a count marginal: k rows per privacy unit (`marginals.units`)
    budget: float = 0.0  # the rho AIM's own measurements and selections may spend (the rest: the analysis)
    rows: Any = None  # the (bounded) private rows, for the analysis only; never leave the run
    analysis_share: float = 0.0


class AIM:
    """The AIM mechanism; ``run(dataset)`` returns a `Release`.

    ``AIM(epsilon, delta, **hyperparameters)``: the keyword arguments are the fields of
    `AIMConfig` (documented there; validated when the object is built) and ``progress``: report
    every round on stderr (`aim.progress`: a tqdm bar on a terminal, plain lines otherwise).
    ``AIM.from_config(config)`` builds one from a configuration, ``AIM.config`` exposes it.

    The defaults (25-iteration rounds, anneal confirmed at 100, an 80-iteration final fit) come
    from adult at eps = 1 (benchmarks/aim_adult.py, 6 seeds, float sampler): longer fits overfit
    the noisy measurements (final fit 4000 iterations: mean error 0.0536; 1000 with tol 1e-4:
    0.0529; 80: 0.0527), short unconfirmed rounds anneal too early (0.0528), and short rounds with
    confirmed annealing reach 0.0517.
    """

    def __init__(self, epsilon: float, delta: float = DEFAULT_DELTA, *, progress: bool = False,
                 **hyperparameters: Any) -> None:
        self._config = AIMConfig(epsilon, delta, **hyperparameters)
        self.progress = progress

    @classmethod
    def from_config(cls, config: AIMConfig, *, progress: bool = False) -> "AIM":
        """An AIM run with the hyperparameters of ``config`` (already validated)."""
        if not isinstance(config, AIMConfig):
            raise TypeError(f"config must be an AIMConfig, got {type(config).__name__}")
        aim = cls.__new__(cls)
        aim._config, aim.progress = config, progress
        return aim

    @property
    def config(self) -> AIMConfig:
        """The run's hyperparameters (frozen)."""
        return self._config

    def __repr__(self) -> str:
        return f"AIM({self._config!r}, progress={self.progress})"

    def run(self, dataset: RowSource, units: Any = None, analysis: Any = None, spec: Any = None) -> Release:
        """Run AIM on ``dataset`` and return the release (measurements, model, ledger, log).

        ``units``: with a privacy unit (``unit=``, ``max_rows_per_unit=``), the unit id of every
        row (an array or Series in row order, or a DataFrame holding the ``unit`` column; never
        released); at most k rows per unit are kept (`marginals.units.bound_rows`).
        ``analysis``: a DD-SSP estimator (public hyperparameters) whose regression the release
        serves: ``analysis_share`` of rho is kept for its Newton refinement (`aim.analysis`).
        ``spec``: the domain's public spec (a `Discretizer` or dict), attached to the release (before
        the analysis fits itself to it: a spec's class labels shape a logistic regression)."""
        if not is_rows(dataset):
            raise TypeError(
                f"AIM.run needs private rows (a marginals.Dataset or DaskDataset), got {type(dataset).__name__}"
            )
        if analysis is not None:
            check_plan(analysis, dataset.domain)
            if not isinstance(dataset, Dataset):
                raise TypeError(f"analysis= needs the rows in memory (a marginals.Dataset), got {type(dataset).__name__}")
        check_unweighted(dataset, "AIM.run")  # weighted counts: sensitivity 1 would not hold
        if (units is None) != (self._config.unit is None):
            raise ValueError(f"AIM.run: units are required with unit={self._config.unit!r}: the unit id of every row "
                             "(an array or Series, or a DataFrame holding the column)" if self._config.unit else
                             "AIM.run: units given, but the AIM has no unit= (the privacy unit is one row)")
        with one_blas_thread():  # the engine's own threads, not BLAS's (pgm.kernels.blas)
            return self._run(dataset, units, analysis, spec)

    def _run(self, dataset: RowSource, units: Any = None, analysis: Any = None, spec: Any = None) -> Release:
        """Initialise, run the rounds until the budget is spent, the final fit and the analysis."""
        state = self._initialise(dataset, units, analysis)
        progress = RunProgress(self.progress, state.ledger.rho)
        progress.start(
            f"AIM: eps={self._config.epsilon:g} delta={self._config.delta:g} rho={state.ledger.rho:.6g}, "
            f"{len(state.cand_list)} candidates, T={state.planned_rounds}, sigma={state.sigma:.2f}; "
            f"{len(state.measurements)} initial marginals measured",
            state.ledger.spent,
        )
        while not state.last:
            progress.round(self._round(state))
        self._finish(state)
        progress.finish(len(state.log), state.model.size_mb)
        release = Release(
            domain=state.domain,
            measurements=state.measurements,
            model=state.model,
            ledger=state.ledger,
            rounds=state.log,
            config=build_config(self._resolved(state)),
            private=state.rng.private,
        )
        if spec is not None:
            release = release.with_spec(spec)
        if analysis is not None:
            release.analysis = run_analysis(release, state.rows, analysis, state.analysis_share, state.rng, state.ledger,
                                            self._config.exact_noise, state.sensitivity)  # fmt: skip
            check_ledger(state.ledger)
        return release

    def _resolved(self, state: _RunState) -> AIMConfig:
        """The configuration the release records: the workload the run resolved, and with targets
        the share of rho their pairs spent."""
        resolved = dataclasses.replace(self._config, workload=tuple(state.workload))
        if state.analysis_share:
            resolved = dataclasses.replace(resolved, analysis_share=state.analysis_share)
        return dataclasses.replace(resolved, target_share=state.target_share) if resolved.targets else resolved

    def _initialise(self, dataset: RowSource, units: Any = None, analysis: Any = None) -> _RunState:
        """Workload and candidates, the budget and its ledger, the bound on each unit's rows, the
        true answers (computed once), the 1-way (and target-pair) measurements and the first fit."""
        cfg = self._config
        domain = dataset.domain
        T = cfg.rounds if cfg.rounds is not None else 16 * len(domain)
        if T < len(domain) + 1:
            raise ValueError(f"rounds must exceed the number of attributes ({len(domain)}), got {T}")
        targets = () if cfg.targets is None else check_targets_in(domain, cfg.targets)  # before any row is read
        zeros = tuple(compile_rules(domain, cfg.constraints or ()))  # public rules, checked before any row is read
        workload = normalize_workload(domain, self._workload(domain, targets))
        rho = cdp_rho(cfg.epsilon, cfg.delta)
        unit = cfg.privacy_unit
        ledger = Accountant(rho, delta=cfg.delta, unit=unit)
        rng = noise_source(cfg.insecure_seed)
        if unit is not None:  # the key comes first from the noise source: the same on neighbouring inputs
            dataset = bound_dataset(dataset, units, unit, rng)
        cand_weights = candidates(domain, workload)
        oneway = [(a,) for a in domain.attrs]
        pairs = target_pairs(domain, targets)
        queries = list(cand_weights) + [c for c in oneway + pairs if c not in cand_weights]
        answers = dict(zip(queries, dataset.marginals(queries)))
        share = 0.0 if not targets else cfg.target_share or default_share(len(pairs), len(domain))
        k = float(ledger.sensitivity)
        analysis_share = 0.0 if analysis is None else cfg.analysis_share or DEFAULT_ANALYSIS_SHARE
        budget = (1 - analysis_share) * rho  # what AIM itself spends; the analysis keeps the rest
        sigma, eps = round_scales((1 - share) * budget / T, k)  # the rounds plan on what the target pairs leave
        state = _RunState(domain, workload, answers, cand_weights, list(cand_weights), T, ledger, rng, sigma, eps,
                          sensitivity=k, zeros=zeros, budget=budget, rows=None if analysis is None else dataset,
                          analysis_share=analysis_share)
        self._measure(state, [(c, sigma, f"init {c[0]}") for c in oneway])
        if targets:
            self._measure_targets(state, pairs, share, T)
        state.model = self._fit(state, cfg.max_iters, cfg.tol)
        return state

    def _measure(self, state: _RunState, items: list[tuple[Clique, float, str]]) -> None:
        """Measure each (clique, sigma, label) of ``items`` on the true answers, charged to the ledger."""
        for clique, scale, label in items:
            state.measurements.append(measure_counts(
                state.answers[clique], clique, scale, state.rng, state.ledger, label=label, exact=self._config.exact_noise,
                sensitivity=state.sensitivity,
            ))

    def _measure_targets(self, state: _RunState, pairs: list[Clique], share: float, T: int) -> None:
        """The target pairs' measurements. With the default share, no more than the pairs need
        (`aim.targets.needed_share`, from the 1-way measurements' noisy total: post-processing),
        and the rounds' scales planned on what they leave."""
        rho = state.budget
        if self._config.target_share is None:
            k = state.sensitivity
            share = min(share, needed_share(state.domain, pairs, rho, noisy_total(state.measurements), sensitivity=k))
            state.sigma, state.eps = round_scales((1 - share) * rho / T, k)
        state.target_share = share
        sigmas = pair_sigmas(state.domain, pairs, rho, share, sensitivity=state.sensitivity)
        self._measure(state, [(c, s, "init target pair " + ",".join(c)) for c, s in zip(pairs, sigmas)])

    def _workload(self, domain: Domain, targets: tuple[str, ...]) -> Workload:
        """The rounds' workload: the user's, else the target workload (with targets), else all 2-way marginals."""
        cfg = self._config
        if cfg.workload is not None:
            return list(cfg.workload)
        if targets:
            return target_workload(domain, targets, cfg.max_cells)
        return all_k_way(domain, 2, cfg.max_cells)

    def _round(self, state: _RunState) -> dict:
        """One round: plan the scales, filter, select, measure, refit and test for annealing; the
        round's log entry."""
        cfg = self._config
        state.sigma, state.eps, state.last = plan_round(state.budget - state.ledger.spent, state.sigma, state.eps,
                                                        state.sensitivity)
        rho_used = state.ledger.spent + round_cost(state.sigma, state.eps, state.sensitivity)
        allowed = self._filter(state.domain, state.model, state.cand_list, cfg.max_model_size * rho_used / state.budget)
        number = len(state.log) + 1
        choice, before = self._select(state, allowed, number)
        state.measurements.append(measure_counts(
            state.answers[choice], choice, state.sigma, state.rng, state.ledger, label=f"round {number}",
            exact=cfg.exact_noise, sensitivity=state.sensitivity,
        ))
        if state.last:  # the final estimation fits the last measurement; no annealing test needed
            anneal, iterations, size_mb = False, 0, model_size_mb(state.domain, state.model.cliques + (choice,))
        else:
            anneal, iterations = self._refit(state, choice, before)
            size_mb = state.model.size_mb
        entry = {
            "round": number,
            "clique": list(choice),
            "sigma": state.sigma,
            "eps_select": state.eps,
            "rho_used": state.ledger.spent,
            "candidates": len(allowed),
            "model_size_mb": size_mb,
            "iterations": iterations,
            "annealed": anneal,
            # no wall time: the exact selection's running time depends on the private scores
        }
        state.log.append(entry)
        if anneal:
            state.sigma, state.eps = state.sigma / 2, state.eps * 2
        return entry

    def _select(self, state: _RunState, allowed: list[Clique], number: int) -> tuple[Clique, np.ndarray]:
        """Score the allowed candidates against the current model and pick one with the exponential
        mechanism; returns the choice and the model's marginal over it before the measurement."""
        estimates = state.model.marginals(allowed)
        penalty = EXPECTED_L1 * state.sigma
        weights, answers = state.cand_weights, state.answers
        sizes = np.array([est.size for est in estimates])
        l1 = _l1_distances([answers[r] for r in allowed], estimates, sizes)
        scores = np.array([weights[r] for r in allowed]) * (l1 - penalty * sizes)
        sensitivity = state.sensitivity * max(weights[r] for r in allowed)  # one unit moves each L1 by <= k
        index = exponential_mechanism(scores, state.eps, sensitivity, state.rng, state.ledger, label=f"select round {number}")
        return allowed[index], estimates[index]

    def _refit(self, state: _RunState, choice: Clique, before: np.ndarray) -> tuple[bool, int]:
        """The round's warm-started fit and the annealing test; returns (anneal, iterations)."""
        cfg = self._config
        budget = self._round_iters(state.domain, state.model.cliques + (choice,))
        state.model = self._fit(state, budget, cfg.tol)
        iterations = state.model.info["iterations"]
        anneal = should_anneal(before, state.model.marginals([choice])[0], state.sigma)
        if anneal and iterations >= budget and budget < cfg.max_iters:
            # The work cap may have stopped the fit before the new marginal settled: an
            # under-converged fit looks "uninformative" and would anneal too early.
            state.model = self._fit(state, cfg.max_iters - budget, cfg.tol)
            iterations += state.model.info["iterations"]
            anneal = should_anneal(before, state.model.marginals([choice])[0], state.sigma)
        confirm = 0 if cfg.anneal_iters is None else self._round_iters(state.domain, state.model.cliques, cfg.anneal_iters)
        if anneal and iterations < confirm:
            # Short round fits steer selection well but make the annealing test noisy:
            # confirm an "anneal" with a longer (work-capped) fit before halving sigma.
            state.model = self._fit(state, confirm - iterations, cfg.tol)
            iterations += state.model.info["iterations"]
            anneal = should_anneal(before, state.model.marginals([choice])[0], state.sigma)
        return anneal, iterations

    def _finish(self, state: _RunState) -> None:
        """The final fit (covering the last measurement) and the ledger check."""
        iters = self._final_iters(state.domain, tuple(m.clique for m in state.measurements) + state.model.cliques)
        state.model = self._fit(state, iters, self._config.final_tol)
        check_ledger(state.ledger)
        if not state.ledger.spent <= state.budget * (1 + BUDGET_RTOL):
            raise BudgetExceeded(f"AIM spent {state.ledger.spent!r} of the {state.budget!r} its analysis leaves it")

    def _fit(self, state: _RunState, iters: int, tol: float | None) -> Model:
        """One `pgm.estimate` call on all measurements so far, warm-started from the current model,
        with this run's loss weight and estimator options."""
        cfg = self._config
        return estimate(
            state.domain, state.measurements, iters=iters, tol=tol, warm_start=state.model,
            loss_weight=cfg.loss_weight, zeros=state.zeros, **cfg.estimator_options,
        )

    def _round_iters(self, domain: Domain, cliques, most: int | None = None) -> int:
        """Iterations for one round: ``most`` (default max_iters), fewer on big models (at most round_work cell-iterations)."""
        cfg = self._config
        return _capped_iters(domain, cliques, cfg.max_iters if most is None else most, cfg.min_iters, cfg.round_work)

    def _final_iters(self, domain: Domain, cliques) -> int:
        """Iterations of the final fit: final_iters, fewer on big models (at least 50)."""
        return _capped_iters(domain, cliques, self._config.final_iters, 50, self._config.final_work)

    @staticmethod
    def _filter(domain, model, cand_list: list[Clique], size_limit: float) -> list[Clique]:
        """Candidates inside a junction-tree node (free), or whose hypothetical model fits ``size_limit``."""
        return filter_candidates(domain, model, cand_list, size_limit)
