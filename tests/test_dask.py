"""A sweep's shards on a Dask cluster (a local scheduler and two worker processes, loopback only):
the merged result equals the single-process one, and a worker killed mid-sweep loses no points."""
import os
import signal

import pytest
from conftest import ASM

from emu.drive import shards, sweeper as sweep
from emu.output import report

distributed = pytest.importorskip("distributed")      # in the test extra: CI always has it

SPEC = shards.WorldSpec(str(ASM / "sum_loop.s"), "sum_loop", "go1.27", registers=(("RCX", "300"),))


def _report(runner=None) -> dict:
    world = SPEC.build()
    res = sweep.sweep(world, "sum_loop", runner=runner)
    d = report.to_json(res, world.program, "sum_loop.s")
    d.pop("points_per_second")
    return d


@pytest.fixture(scope="module")
def cluster():
    c = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                 dashboard_address=None, silence_logs=50)
    yield c
    c.close()


def test_dask_shards_merge_to_the_single_process_result(cluster, monkeypatch):
    monkeypatch.setattr(sweep, "SHARD_POINTS", 500)
    local = _report()
    address = "dask://" + cluster.scheduler_address.removeprefix("tcp://")
    assert _report(shards.ShardRunner(SPEC, executor=address)) == local
    assert local["points_tried"] == 2703 and local["ok"]


def test_a_worker_killed_mid_sweep_loses_no_points(cluster, monkeypatch):
    spec = shards.WorldSpec(SPEC.asm, SPEC.entry, SPEC.layout, registers=(("RCX", "2000"),))
    monkeypatch.setattr(sweep, "SHARD_POINTS", 2000)          # 10 shards of ~0.2 s
    world = spec.build()
    local = sweep.sweep(world, "sum_loop")
    client = distributed.Client(cluster.scheduler_address)
    pids = client.run(os.getpid)
    killed = []

    def kill_a_busy_worker(result):
        if killed:
            return
        busy = [w for w, keys in client.processing().items() if keys]
        if busy:
            os.kill(pids[busy[0]], signal.SIGKILL)
            killed.append((busy[0], len(client.processing()[busy[0]])))
    runner = shards.ShardRunner(spec, executor=cluster.scheduler_address, on_result=kill_a_busy_worker)
    try:
        res = sweep.sweep(spec.build(), "sum_loop", runner=runner)
    finally:
        client.close()
    assert killed and killed[0][1] >= 1                 # it died with shards in flight ...
    assert runner.ran == 10                             # ... which ran again elsewhere
    assert (res.points, res.injected, res.violation_count) == (local.points, local.injected, 0) == (18003, 18003, 0)
    assert {pc: ps.verdicts for pc, ps in res.per_pc.items()} == {pc: ps.verdicts for pc, ps in local.per_pc.items()}


@pytest.mark.parametrize("delay", [0.5, 1.0, 1.5, 2.0, 2.5])
def test_ctrl_c_with_the_dask_executor_exits_at_once_with_the_shards_done(cluster, delay):
    """#40: a real SIGINT while the shards run on the cluster: exit 130 within seconds, the partial summary
    (or nothing yet), no traceback; the cluster's futures are released with the client."""
    import subprocess
    import sys
    import time
    from conftest import ROOT
    address = "dask://" + cluster.scheduler_address.removeprefix("tcp://")
    p = subprocess.Popen([sys.executable, "-m", "emu", "sweep", str(ASM / "sum_loop.s"), "--func", "sum_loop", "--reg",
                          "RCX=2000000", "--executor", address], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and time.monotonic() - t0 < 10, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert err.strip().splitlines()[-1].startswith("preemu: interrupted (Ctrl-C)")
