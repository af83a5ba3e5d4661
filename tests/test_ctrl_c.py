"""Ctrl-C during a real-program sweep (issue #40 item 1): exit 130 at once with the partial summary, no Python
noise (a KeyboardInterrupt inside an engine callback is what ctypes prints and drops), no worker left
behind. The SIGINT is real, sent at chosen slices of the run (deterministic moments), or, with worker
processes, after a wall-clock delay."""
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_AT_SLICE = """
import os, signal, sys
from emu import cli
from emu.linux import process
at, orig, n = int(sys.argv[1]), process.Process._run_slice, [0]
def run_slice(self, *a):
    orig(self, *a)
    n[0] += 1
    if n[0] == at:
        os.kill(os.getpid(), signal.SIGINT)
process.Process._run_slice = run_slice
sys.exit(cli.main(sys.argv[2:]))
"""


def _clean(r) -> None:
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("preemu: interrupted (Ctrl-C)"), r.stderr


# mixed's sweep (3,000 points, one to-exit run) is about 6,300 slices: start-up, the references, the chains
@pytest.mark.parametrize("at", [40, 700, 2500, 4500, 6000])
def test_a_real_sweep_stops_at_any_moment(at):
    r = subprocess.run([sys.executable, "-c", _AT_SLICE, str(at), "sweep", "tests/data/go/kinds", "--func", "mixed",
                        "--to-exit", "1", "--jobs", "1", "--max-points", "3000"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 130, r.stderr
    _clean(r)


# churn's --gc=scan sweep (200 points) is about 2,450 slices; its single chain reports where it got to
@pytest.mark.parametrize("at", [700, 1200, 1500, 1800, 2300])
def test_a_gc_sweep_shows_the_chain_it_was_in(at):
    r = subprocess.run([sys.executable, "-c", _AT_SLICE, str(at), "sweep", "tests/data/go/gcreal", "--func", "churn",
                        "--gc=scan", "--max-points", "200", "--jobs", "1", "--", "200"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 130, r.stderr
    _clean(r)
    assert r.stdout.startswith("partial: the chain in progress had reached ") and "GC cycle(s)" in r.stdout


def _children(pid: int) -> list[str]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return out.split()


@pytest.mark.parametrize("delay", [0.6, 1.0, 1.4, 1.8, 2.2])
def test_worker_processes_are_stopped_not_waited_for(delay):
    p = subprocess.Popen([sys.executable, "-m", "emu", "sweep", "asm/sum_loop.s", "--func", "sum_loop",
                          "--reg", "RCX=2000000", "--jobs", "2"], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    kids = _children(p.pid)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert time.monotonic() - t0 < 5
    assert "Traceback" not in err and "Exception ignored" not in err
    deadline = time.monotonic() + 5                   # nothing left running (the pool's helpers exit as they see
    while time.monotonic() < deadline and any(_alive(k) for k in kids):     # the coordinator gone)
        time.sleep(0.1)
    assert not [k for k in kids if _alive(k)]


def _alive(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "zombie" not in f.read().lower()
    except OSError:
        return False


_AT_ENGINE_RUN = """
import os, signal, sys
from emu import cli
from emu.model import machine
at, orig, n = int(sys.argv[1]), machine.Machine._engine_run, [0]
def engine_run(self, *a):
    n[0] += 1
    if n[0] == at:                       # SIGINT while this run is inside the engine: its hooks see it
        os.kill(os.getpid(), signal.SIGINT)
    return orig(self, *a)
machine.Machine._engine_run = engine_run
sys.exit(cli.main(sys.argv[2:]))
"""


# the model world (.s input): a sweep in this process, check-stub and explain, at engine runs 3 to 40,000
@pytest.mark.parametrize("at", [3, 200, 4000, 15000, 40000])
@pytest.mark.parametrize("args", [["sweep", "asm/sum_loop.s", "--func", "sum_loop", "--reg", "RCX=400000", "--jobs", "1"],
                                  ["check-stub", "asm/preempt_amd64_go114.s", "--jobs", "1"]], ids=["sweep", "check-stub"])
def test_the_model_world_stops_at_any_moment(at, args):
    r = subprocess.run([sys.executable, "-c", _AT_ENGINE_RUN, str(at), *args], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    _clean(r)


# explain of Go input: the start-up, the references, the story (about 70 slices)
@pytest.mark.parametrize("at", [5, 20, 35, 50, 65])
def test_explain_of_go_input_stops_at_any_moment(at):
    r = subprocess.run([sys.executable, "-c", _AT_SLICE, str(at), "explain", "tests/data/go/kinds", "--func", "mixed",
                        "--at", "100"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    _clean(r)


# exec: the program (starve, which never ends) at five slices; the partial report of the run so far
@pytest.mark.parametrize("at", [10, 100, 400, 1500, 4000])
def test_exec_stops_at_any_moment_with_the_partial_report(at):
    r = subprocess.run([sys.executable, "-c", _AT_SLICE, str(at), "exec", "scenarios/go/starve", "--env",
                        "GODEBUG=asyncpreemptoff=1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    _clean(r)
    assert "the summary above is partial" in r.stderr


# explain of .s input: its story is told from model-world runs (about 127 engine runs for this one)
@pytest.mark.parametrize("at", [2, 30, 60, 90, 120])
def test_explain_of_s_input_stops_at_any_moment(at):
    r = subprocess.run([sys.executable, "-c", _AT_ENGINE_RUN, str(at), "explain", "asm/adc_chain.s", "--func",
                        "adc_chain", "--reg", "RCX=64", "--at", "5"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 130, (r.returncode, r.stderr[-500:])
    _clean(r)
