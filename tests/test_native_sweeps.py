"""Identical results (issue #49 item 3): a sample of sweeps run with the compiled per-point path
(emu/engine/_native.c, PREEMU_NATIVE=1) and with the Python path it mirrors (PREEMU_NATIVE=0) give the same
JSON, but for the CPU and wall figures: verdicts, counts, per-PC statistics, violations, references, the --gc
cycles, a whole program's signals and preemptions, exit status."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KINDS = str(ROOT / "tests/data/go/kinds")
TIMING = {"cpu_seconds", "us_per_point", "wall_seconds", "seconds", "speed", "points_per_second", "elapsed", "wall_s"}

SWEEPS = {
    "mixed": ["sweep", KINDS, "--func", "mixed", "--max-points", "300"],
    "spawn": ["sweep", KINDS, "--func", "spawn", "--max-points", "300"],
    "spin": ["sweep", KINDS, "--func", "spin", "--reg", "RAX=300", "--max-points", "300"],
    # --gc: the runtime's own cycle at every injection; `hidden` fails (a use after free), so violations compare
    "gcreal --gc": ["sweep", str(ROOT / "tests/data/go/gcreal"), "--func", "hidden", "--gc", "--max-points", "120"],
    # a whole program: SIGURGs, asynchronous preemptions and a GC while a spinner holds the only P
    "exec gcspin": ["exec", str(ROOT / "scenarios/go/gcspin")],
    "adc_chain.s": ["sweep", str(ROOT / "asm/adc_chain.s"), "--func", "adc_chain", "--reg", "RCX=64",
                    "--max-points", "300"],
}


def _untimed(x):
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if k not in TIMING}
    if isinstance(x, list):
        return [_untimed(v) for v in x]
    return x


def _run(args, mode: str, cwd: Path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREEMU_NATIVE": mode}
    r = subprocess.run([sys.executable, "-m", "emu", *args, "--json"], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.stdout.strip(), r.stderr[-2000:]
    return r.returncode, _untimed(json.loads(r.stdout))


@pytest.mark.parametrize("name", list(SWEEPS))
def test_the_compiled_path_gives_the_python_paths_json(name, tmp_path):
    native_rc, native = _run(SWEEPS[name], "1", tmp_path)
    python_rc, python = _run(SWEEPS[name], "0", tmp_path)
    assert native_rc == python_rc
    assert native.get("points_reached", native.get("points")) == python.get("points_reached", python.get("points"))
    assert native == python
