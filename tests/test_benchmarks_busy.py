"""`benchmarks.harness.busy_process`: it spins while its parent lives and ends with it."""

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
