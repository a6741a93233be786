"""The engine owns its BLAS threads: one BLAS thread inside its hot paths.

Belief propagation, mirror descent and the candidate queries make thousands of small matrix
products (`pgm.kernels.factored`, einsum contractions). With OpenBLAS's default of one thread per
core, each product wakes a team of threads that then compete with the engine's own slab threads
(`pgm.kernels.threads`) and with any other process on the machine: on 2 cores beside one busy
process an AIM run on adult at eps = 10 took 41-53 s instead of 9-15 s. So the engine's entry
points (`pgm.estimate`, `AIM.run`, model queries and sampling) run under ``one_blas_thread``, which
limits BLAS to one thread (threadpoolctl, as scikit-learn does) and restores the caller's setting
on exit. The libraries are found once (a millisecond), on first use: numpy's BLAS, the one the
engine's products run on, is loaded by then. Entering costs about 10 microseconds, and nested
entries nothing. Parallelism where it pays comes from the engine's own threads.
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

from threadpoolctl import ThreadpoolController

F = TypeVar("F", bound=Callable)

_lock = threading.Lock()
_depth = 0
_limits = None
_controller: ThreadpoolController | None = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit BLAS to one thread for the duration (nested uses cost nothing)."""
    global _depth, _limits, _controller
    with _lock:
        _depth += 1
        if _depth == 1:
            try:
                if _controller is None:
                    _controller = ThreadpoolController()
                _limits = _controller.limit(limits=1, user_api="blas")
            except BaseException:
                _depth -= 1
                raise
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _limits is not None:
                _limits.restore_original_limits()
                _limits = None
_controller: ThreadpoolController | None = None


def blas_single_threaded(func: F) -> F:
    """Decorator: run ``func`` under `one_blas_thread`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with one_blas_thread():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
