"""Where a sweep's shards run: here, in N local processes (--jobs N) or on a Dask cluster
(--executor dask://HOST:PORT); with progress on stderr, a resumable results file and a clean Ctrl-C.

A shard (sweeper.run_shard) is a pure function of (how to build the world, the reference run, the
options, its points and its start snapshot), so any executor can run it; results merge in shard
order (sweeper.merge_shards), which makes the report the same whatever runs the shards. Workers build
their world once per process from a WorldSpec. A Dask worker that dies loses no points: the
scheduler re-runs its shards elsewhere (`retries`). Heavy imports (concurrent.futures' process pool,
distributed, tqdm) happen only when used.

Progress is one bar (tqdm on stderr: points done, rate, ETA) that the runner moves by each finished
shard's points; a shard that iterates its points through `ticking` (the real-program sweep's chain does)
moves it point by point as it reaches them, here or in a local worker process (through a queue), so a
long shard is not minutes of silence. A shard whose points are open-ended (the --gc chain: every k-th
boundary until F returns) has no total: the bar counts the points reached, with their rate.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import asdict, astuple, dataclass

from .. import __version__
from . import loader, sweeper
from ..core import memmap
from ..check import verify
from ..core.errors import EmuError

DASK_RETRIES = 3


@dataclass(frozen=True)
class WorldSpec:
    """Everything needed to build the same World in another process."""

    asm: str
    entry: str
    layout: str = "go1.14"
    stub: str | None = None
    seed: int = 1
    registers: tuple[tuple[str, str], ...] = ()
    gc: bool = False
    scanner: str = "go"
    stack_size: int = memmap.DEFAULT_STACK_SIZE

    def build(self):
        program = loader.load_program(self.asm)
        return loader.build_world(program, self.entry, self.layout, self.stub, self.seed, dict(self.registers),
                                  gc=self.gc, scanner=self.scanner, stack_size=self.stack_size)

    @staticmethod
    def run(world, ref, index, points, start, opts) -> sweeper.ShardResult:
        return sweeper.run_shard(world, ref, index, points, start, opts)


_WORLDS: dict[WorldSpec, object] = {}       # per worker process


def run_task(spec: WorldSpec, ref: sweeper.Reference, opts: sweeper.ChainOptions, task) -> sweeper.ShardResult:
    """Run one shard in this process (the function executors call)."""
    world = _WORLDS.get(spec)
    if world is None:
        world = _WORLDS[spec] = spec.build()
    index, points, start = task
    return spec.run(world, ref, index, points, start, opts)


def _ignore_sigint(ticks=None) -> None:
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # Ctrl-C is the coordinator's to handle
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # (forked while the coordinator held it back)
    if ticks is not None:                             # a worker's points go to the coordinator's bar
        global _TICK
        _TICK = lambda index, n: ticks.put((index, n))     # noqa: E731


# --- progress point by point ------------------------------------------------------------------------
_TICK = None            # callable(shard index, points) while a runner with a bar runs shards in this process


def ticking(points, index: int):
    """Iterate `points` (a shard's), telling the runner's bar of each one once the shard has gone past it
    (a loop asks for the next point when it is done with the one before); nothing without a bar."""
    tick = _TICK
    if tick is None:
        yield from points
        return
    first = True
    for k in points:
        if not first:
            tick(index, 1)
        first = False
        yield k
    if not first:
        tick(index, 1)


def points_total(tasks) -> int | None:
    """The points of these shard tasks, or None when a task's are open-ended (no length, or 2**40 or more:
    the --gc chain's range, which stops when F returns)."""
    total = 0
    for t in tasks:
        try:
            n = len(t[1])
        except TypeError:
            return None
        if n >= 1 << 40:
            return None
        total += n
    return total


def tqdm_bar(total: int | None, initial: int):
    """The sweep's progress bar on stderr: points, rate, ETA (tqdm; without a total, points and rate)."""
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, unit=" points", unit_scale=True, file=sys.stderr,
                desc="preemu sweep", leave=False, dynamic_ncols=True)


def _start_workers(pool) -> None:
    """Fork the pool's workers now, with SIGINT held back meanwhile: a Ctrl-C in the middle of a fork lands in the
    interpreter's at-fork handlers (logging's _releaseLock), which print it and drop it. Held back, it is taken
    once the workers exist, as a KeyboardInterrupt in plain code (the pool is torn down as below)."""
    import signal
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pool.submit(int).result()             # the first task starts the workers (all of them, with fork)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


@contextmanager
def _process_pool(workers: int, ticks=None):
    """Local worker processes that leave Ctrl-C to the coordinator (and send their points' ticks to
    `ticks`, a queue); on the way out (a Ctrl-C included) queued work is cancelled and the workers are
    waited for."""
    from concurrent.futures import ProcessPoolExecutor
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint, initargs=(ticks,))
    try:
        _start_workers(pool)
        yield pool
    except BaseException:
        # a Ctrl-C (or an error) mid-sweep: a running worker's shard is abandoned, not waited for (a shard can
        # take seconds, and waiting for one while the pool's queue feeds it had deadlocked). The workers are
        # terminated; their shards are not in the results file, so a rerun does them again.
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    else:
        pool.shutdown(wait=True, cancel_futures=True)


def map_ordered(fn, items: list, jobs: int):
    """Yield fn(x) for x in items, in item order, computed in up to `jobs` local processes when
    jobs > 1. fn must be a module-level function (it is pickled)."""
    if jobs <= 1 or len(items) <= 1:
        yield from map(fn, items)
        return
    with _process_pool(min(jobs, len(items))) as pool:
        yield from pool.map(fn, items)


# --- results file (JSON lines, one per finished shard) ---------------------------------------
def shard_to_json(r: sweeper.ShardResult) -> dict:
    return {"index": r.index, "points": r.points, "injected": r.injected, "forced": r.forced,
            "refused": dict(r.refused), "cpu_seconds": round(r.cpu_seconds, 3),
            "violations": {"count": r.violations.count, "keep": r.violations.keep,
                           "groups": [[k, w, n] for (k, w), n in r.violations.groups.items()],
                           "kept": [v.to_json() for v in r.violations.kept]},
            "per_pc": [[pc, dict(ps.verdicts)] for pc, ps in r.per_pc.items()],
            "gc": None if r.gc is None else asdict(r.gc), "extra": r.extra}


def shard_from_json(d: dict) -> sweeper.ShardResult:
    v = d["violations"]
    log = sweeper.ViolationLog(v["keep"])
    log.count = v["count"]
    log.groups = Counter({(k, w): n for k, w, n in v["groups"]})
    log.kept = [verify.Violation(**{**x, "pc": int(x["pc"], 16)}) for x in v["kept"]]
    per_pc = {pc: sweeper.PcStats(pc, Counter(c)) for pc, c in d["per_pc"]}
    return sweeper.ShardResult(d["index"], d["points"], d["injected"], d["forced"], Counter(d["refused"]), log,
                             per_pc, d["cpu_seconds"], None if d.get("gc") is None else sweeper.GcStats(**d["gc"]),
                             d.get("extra"))


def run_key(spec: WorldSpec, ref: sweeper.Reference, opts: sweeper.ChainOptions, tasks) -> str:
    """Identifies one sweep: same program text, world, options and shard plan -> same key."""
    h = hashlib.sha256()
    for path in (spec.asm, spec.stub):
        if path and os.path.isdir(path):          # a Go package directory: every file in it
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    with open(os.path.join(root, name), "rb") as f:
                        h.update(name.encode() + f.read())
        elif path and os.path.isfile(path):       # (not a file: "generated" stub)
            with open(path, "rb") as f:
                h.update(f.read())
    plan = [(i, len(pts), pts[0] if len(pts) else -1) for i, pts, _ in tasks]
    h.update(json.dumps([__version__, type(spec).__name__, astuple(spec), astuple(opts), ref.boundaries, plan],
                        default=str).encode())
    return h.hexdigest()[:32]


def load_results(path: str, key: str) -> dict[int, sweeper.ShardResult]:
    """Finished shards of the sweep `key` in the results file (other sweeps' lines are ignored)."""
    out: dict[int, sweeper.ShardResult] = {}
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    if f.read(1) == "":           # a line cut short by an interrupted write: ignore it
                        break
                    raise EmuError(f"{path}:{n}: not a preemu results line") from None
                if not isinstance(rec, dict):           # JSON, but not one of the objects sweeps append
                    raise EmuError(f"{path}:{n}: not a preemu results line (a JSON {type(rec).__name__}, not the "
                                   "object a sweep appends for each shard)")
                if rec.get("key") == key:
                    try:
                        r = shard_from_json(rec["result"])
                    except (KeyError, TypeError, ValueError, AttributeError):
                        raise EmuError(f"{path}:{n}: a results line of this sweep whose shard cannot be read "
                                       "back (edited by hand?); remove the line or the file") from None
                    out[r.index] = r
    except FileNotFoundError:
        pass
    except UnicodeDecodeError:
        raise EmuError(f"{path}: not a preemu results file (it is not text)") from None
    except OSError as e:
        raise EmuError(f"{path}: cannot read: {e.strerror}") from None
    return out


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a sharded sweep; carries the shards finished so far."""

    def __init__(self, done: list[sweeper.ShardResult], total: int, live: str = ""):
        super().__init__("interrupted")
        self.done, self.total, self.live = done, total, live     # live: the chain in progress, said in a line


def _parse_executor(executor: str | None) -> str | None:
    executor = executor or os.environ.get("DASK_SCHEDULER_ADDRESS") or None
    if executor is None:
        return None
    for scheme in ("dask://", "tcp://"):
        if executor.startswith(scheme):
            host, _, port = executor[len(scheme):].rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise EmuError(f"--executor {executor!r}: write dask://HOST:PORT with PORT a number "
                               "(a Dask scheduler's address)")
            return f"tcp://{host}:{port}"
    raise EmuError(f"--executor {executor!r}: write dask://HOST:PORT (a Dask scheduler's address)")


#: how long a Dask scheduler may take to accept a connection, and then to send its handshake
DASK_WAIT_S = 10
#: a Dask scheduler's handshake is a small msgpack map (about 60 bytes: compression, python, pickle-protocol);
#: a first frame announced larger than this is another protocol's bytes read as a length
MAX_HANDSHAKE = 1 << 20


def probe_scheduler(address: str) -> None:
    """An EmuError unless a Dask scheduler answers at `address` (tcp://HOST:PORT), checked before distributed's
    Client is given it: a scheduler writes its handshake as soon as a client connects (distributed/comm/core.py,
    on_connection: comm.write before comm.read), a frame that starts with its length as a little-endian uint64
    (distributed/comm/tcp.py, TCP.read). Client trusts that length (an HTTP server's first bytes asked it for
    exabytes: MemoryError) and waits for a handshake without a limit (a service that says nothing hung it)."""
    import socket
    import struct
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    try:
        conn = socket.create_connection((host.strip("[]"), int(port)), timeout=DASK_WAIT_S)
    except OSError as e:
        raise EmuError(f"--executor: cannot reach the Dask scheduler at {address}: {e.strerror or e}") from None
    head = b""
    try:
        with conn:
            while len(head) < 8:
                chunk = conn.recv(8 - len(head))
                if not chunk:
                    break
                head += chunk
    except TimeoutError:
        raise EmuError(f"--executor: {address} accepted the connection but sent nothing for {DASK_WAIT_S} s; a Dask "
                       "scheduler sends its handshake at once: is it one?") from None
    except OSError as e:
        raise EmuError(f"--executor: {address}: the connection failed ({e.strerror or e}) before a Dask "
                       "handshake came") from None
    if len(head) < 8 or struct.unpack("<Q", head)[0] > MAX_HANDSHAKE:
        got = f"its first bytes are {head!r}" if head else "it closed the connection without a word"
        raise EmuError(f"--executor: {address} is not a Dask scheduler ({got}, not a Dask handshake)")


class ShardRunner:
    """sweeper.sweep(..., runner=ShardRunner(...)): runs the shards, records and reports progress.

    progress: False, True (tqdm_bar on stderr) or a bar factory of your own, called as factory(total or None,
    points already done) and returning an object with update(n), refresh() and close()."""

    def __init__(self, spec: WorldSpec, jobs: int = 1, executor: str | None = None, results: str | None = None,
                 progress=False, local_world=None, on_result=None):
        self.spec, self.jobs, self.results, self.progress = spec, max(1, jobs), results, progress
        self.address = _parse_executor(executor)
        self.local_world = local_world
        self.on_result = on_result          # called with each shard result as it arrives
        self.resumed = 0                    # shards taken from the results file
        self.ran = 0                        # shards run (not taken from the file)

    def __call__(self, tasks, ref, opts):
        done: dict[int, sweeper.ShardResult] = {}
        key = None
        if self.results:
            key = run_key(self.spec, ref, opts, tasks)
            done = {i: r for i, r in load_results(self.results, key).items() if i < len(tasks)}
            self.resumed = len(done)
        todo = [t for t in tasks if t[0] not in done]
        bar = self._bar(points_total(tasks), sum(r.points for r in done.values()))
        out = open(self.results, "a") if self.results else None
        global _TICK
        ticked: Counter = Counter()             # points of a running shard already on the bar, by shard
        if bar is not None:
            def tick(index: int, n: int) -> None:
                if index not in done:           # a late tick of a finished shard is in its result already
                    ticked[index] += n
                    bar.update(n)
            self._tick, _TICK = tick, tick
        try:
            for r in self._execute(todo, ref, opts):
                done[r.index] = r
                self.ran += 1
                if self.on_result is not None:
                    self.on_result(r)
                if out is not None:
                    try:
                        out.write(json.dumps({"key": key, "shard": r.index, "result": shard_to_json(r)}) + "\n")
                        out.flush()
                    except OSError as e:            # a full disk: one clean line, not a traceback
                        raise EmuError(f"--results {self.results}: cannot write it ({(e.strerror or str(e)).lower()}); "
                                       f"{len(done)} shard(s) finished") from None
                if bar is not None and r.points > ticked[r.index]:
                    bar.update(r.points - ticked[r.index])
            if bar is not None:
                # tqdm draws at most every 0.1 s, so a sweep that ends sooner would clear the bar
                # (leave=False) without ever drawing its last state: draw it once, complete.
                bar.refresh()
        except KeyboardInterrupt:
            raise Interrupted(sorted(done.values(), key=lambda r: r.index), len(tasks)) from None
        finally:
            _TICK = None
            if out is not None:
                try:
                    out.close()
                except OSError:                     # what a full disk refused above is reported there
                    pass
            if bar is not None:
                bar.close()
        return list(done.values())

    def _bar(self, total: int | None, initial: int):
        self._tick = None
        if not self.progress:
            return None
        return (tqdm_bar if self.progress is True else self.progress)(total, initial)

    def _execute(self, todo, ref, opts):
        if not todo:
            return
        if self.address is not None:
            yield from self._dask(todo, ref, opts)
        elif self.jobs == 1 or len(todo) == 1:
            for t in todo:
                if self.local_world is not None:
                    index, points, start = t
                    yield self.spec.run(self.local_world, ref, index, points, start, opts)
                else:
                    yield run_task(self.spec, ref, opts, t)
        else:
            yield from self._processes(todo, ref, opts)

    def _processes(self, todo, ref, opts):
        from concurrent.futures import FIRST_COMPLETED, wait
        ticks = None
        if self._tick is not None:              # the workers' points, as they reach them, to the bar
            import multiprocessing
            ticks = multiprocessing.SimpleQueue()

        def drain():
            while ticks is not None and not ticks.empty():
                self._tick(*ticks.get())
        with _process_pool(min(self.jobs, len(todo)), ticks) as pool:
            pending = {pool.submit(run_task, self.spec, ref, opts, t) for t in todo}
            while pending:
                finished, pending = wait(pending, timeout=None if ticks is None else 0.2,
                                         return_when=FIRST_COMPLETED)
                drain()
                for f in finished:
                    yield f.result()

    def _dask(self, todo, ref, opts):
        try:
            from distributed import Client, as_completed
        except ImportError:
            raise EmuError("--executor dask://...: the 'distributed' package is not installed "
                           "(pip install 'preemu[dask]')") from None
        probe_scheduler(self.address)
        try:
            client = Client(self.address, timeout=DASK_WAIT_S)
        except OSError as e:
            raise EmuError(f"--executor: cannot reach the Dask scheduler at {self.address}: {e}") from None
        try:
            futures = [client.submit(run_task, self.spec, ref, opts, t, pure=False, retries=DASK_RETRIES)
                       for t in todo]
            for f in as_completed(futures):
                yield f.result()
        finally:
            client.close()
