"""`benchmarks.harness`: the busy process spins while its parent lives and ends with it; a run's peak memory is its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from benchmarks.harness import BUSY_LOOP, busy_process


def test_the_busy_process_spins_until_killed():
    process = busy_process()
    try:
        time.sleep(0.3)
        assert process.poll() is None
    finally:
        process.kill()
        process.wait()


def _spinning(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has stopped
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_the_busy_process_ends_when_the_process_that_started_it_is_gone():
    # a parent that starts the loop, prints its pid and exits at once (as a benchmark stopped midway)
    code = ("import os, subprocess, sys; "
            f"p = subprocess.Popen([sys.executable, '-c', {BUSY_LOOP!r}, str(os.getpid())], "
            "stdout=subprocess.DEVNULL); print(p.pid)")
    pid = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout)
    try:
        deadline = time.monotonic() + 10
        while _spinning(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _spinning(pid), f"the orphaned busy loop {pid} still runs"
    finally:
        if _spinning(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")
def test_a_fresh_interpreter_reports_its_own_peak_memory_not_its_parents():
    import numpy as np

    from benchmarks.harness import ROOT, peak_rss_mb

    held = np.ones(40_000_000)  # 305 MiB in this process, the parent
    assert peak_rss_mb() > 300
    code = "from benchmarks.harness import peak_rss_mb; print(peak_rss_mb())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT).stdout
    assert float(out) < 200, out  # ru_maxrss would say > 300: the parent's peak survives the exec
    del held
