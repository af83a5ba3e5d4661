"""What `preemu exec` shows: a text summary, one JSON object, and a Perfetto (Chrome JSON) trace.

All three are built from a finished Process and its Watch, nothing else.
"""
from __future__ import annotations

import collections
import json
import shlex

from .. import __version__


def _ms(p, t_ns: int) -> float:
    return (t_ns - p.boot_ns) / 1e6


def declined_by_reason(p) -> dict[str, int]:
    c = collections.Counter(ev.oracle or "no-oracle" for ev in p.watch.signals if ev.outcome == "declined")
    return dict(sorted(c.items()))


def to_json(p, target: str) -> dict:
    w = p.watch
    procs = _processes(p)
    from .report import SCHEMAS
    return {
        "tool": "preemu", "version": __version__, "schema": SCHEMAS["exec"], "command": "exec",
        "binary": target, "argv": p.opts.argv, "env": p.opts.env, "seed": p.opts.seed,
        "exit_code": p.exit_code, "stdout": bytes(p.fds.stdout.data).decode(errors="replace"),
        "stderr": bytes(p.fds.stderr.data).decode(errors="replace"),
        "starved": p.starved, "stop_reason": p.stop_reason or None,
        "error": str(p.error) if p.error else None,
        "virtual_ns": p.clock - p.boot_ns, "idle_ns": p.idle_ns, "instructions": p.insns,
        "ns_per_insn": p.opts.ns_per_insn, "quantum": p.opts.quantum, "threads": len(p.threads),
        "wall_s": round(p.wall_s, 3), "syscalls": dict(sorted(p.syscall_counts.items())),
        "signals": {"sent": len(w.signals), "delivered": sum(ev.delivered_ns is not None for ev in w.signals),
                    "list": [ev.to_json() for ev in w.signals]},
        "preemptions": {"async": [r.to_json() for r in w.preemptions], "declined": declined_by_reason(p)},
        "violations": w.violations,
        "oracle": "emu/check/safepoint.py" if w.oracle is not None else f"unavailable: {p.oracle_note}",
        "go_version": w.oracle.version if w.oracle is not None else None,
        "unmodelled": dict(collections.Counter(p.unmodelled)),
        "processes": procs,
        "ok": not w.violations and p.error is None and not any(r["violations"] for r in procs),
    }


def _processes(p) -> list[dict]:
    from ..linux.proctable import process_rows
    return process_rows(p)


def child_violations(p) -> list:
    """The watch's violations in the other processes of p's run (the first process's are p.watch's)."""
    return [v for r in _processes(p) for v in r["violations"]]


def _process_line(r: dict) -> str:
    end = (f"exit {r['exit_code']}" if r["exit_code"] is not None else f"killed by signal {r['signal']}"
           if r["signal"] else "still running when the run ended")
    argv = shlex.join(r["argv"])
    argv = argv if len(argv) <= 120 else argv[:117] + "..."
    line = f"  pid {r['pid']} (parent {r['ppid']}): {argv}: {end}, {r['instructions']:,} instructions"
    return "\n".join([line] + [f"    {n}" for n in r["notes"]] +
                     [f"    VIOLATION {v['kind']}: {v['message']}" for v in r["violations"]])


def render_text(p, target: str) -> str:
    w = p.watch
    out = []
    vms = (p.clock - p.boot_ns) / 1e6
    if p.starved:
        out.append(f"STARVED: {p.stop_reason}; the program did not finish ({vms:.3f} ms virtual)")
    elif p.error is not None:
        out.append(f"stopped after {vms:.3f} ms virtual by the error below")
    else:
        out.append(f"exit {p.exit_code} after {vms:.3f} ms virtual ({p.stop_reason})")
    cpus = len(p.cpus.clocks)                # the CPUs that ran the threads; idle time is summed over them
    out.append(f"{p.insns:,} instructions at {p.opts.ns_per_insn} ns each on {cpus} CPU{'s' if cpus > 1 else ''}, "
               f"{p.idle_ns / 1e6:.3f} ms idle, "
               f"{len(p.threads)} threads, {sum(p.syscall_counts.values())} syscalls, {p.wall_s:.2f} s wall")
    if w.oracle is not None:
        out.append(f"built by {w.oracle.version}: the oracle applies {w.oracle.rules.version}'s rules")
    outcomes = collections.Counter(ev.outcome for ev in w.signals)
    out.append(f"signals: {len(w.signals)} sent" + (": " + ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))
                                                   if w.signals else ""))
    name = {t.tid: f"{t.name}({t.tid})" for t in p.threads.values()}
    for ev in w.signals:
        at = f" at {ev.where} ({ev.pc:#x}), t={_ms(p, ev.delivered_ns):.3f} ms" if ev.pc is not None else ""
        why = f" [oracle: {ev.oracle}]" if ev.oracle else ""
        what = "SIGURG" if ev.sig == 23 else "SIGSEGV" if ev.sig == 11 else f"signal {ev.sig}"
        out.append(f"  {what} {name.get(ev.sender, f'pid {ev.sender}')} -> {name[ev.target]}{at}: {ev.outcome}{why}")
    out.append(f"async preemptions: {len(w.preemptions)}")
    for r in w.preemptions:
        res = ("never resumed (the program ended first)" if not r.resumed else
               "resumed with registers and flags bit-exact" if r.resume_ok else
               "resumed with DIFFERENT state: " + "; ".join(r.resume_diffs))
        out.append(f"  goroutine {r.goid} (g {r.g:#x}) on {name[r.tid]} at {r.where} ({r.pc:#x}), "
                   f"t={_ms(p, r.time_ns):.3f} ms; "
                   f"oracle: {r.oracle or 'unavailable'}; {res}")
    if w.oracle is None and p.oracle_note:
        out.append(f"oracle unavailable: {p.oracle_note}")
    procs = _processes(p)
    if len(procs) > 1:                   # the program started others
        out.append(f"processes: {len(procs)}")
        out += [_process_line(r) for r in procs]
    for what, n in collections.Counter(p.unmodelled).items():
        out.append(f"not modelled: {what}" + (f" ({n} times)" if n > 1 else ""))
    if w.violations:
        out.append(f"VIOLATIONS: {len(w.violations)}")
        out += [f"  {v['kind']}: {v['message']}" for v in w.violations]
    else:
        out.append("no violations")
    return "\n".join(out) + "\n"


def chrome_trace(p, target: str) -> dict:
    """Trace Event Format: a track per thread with its run slices, signal and preemption instants."""
    us = lambda t: (t - p.boot_ns) / 1000.0    # noqa: E731 (ts is in microseconds)
    ev = [{"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": f"preemu exec {target}"}}]
    for t in p.threads.values():
        ev.append({"ph": "M", "pid": 1, "tid": t.tid, "name": "thread_name", "args": {"name": f"{t.name} ({t.tid})"}})
    for s in p.slices:
        if s.end_ns > s.start_ns:
            ev.append({"ph": "X", "pid": 1, "tid": s.tid, "name": "run", "ts": us(s.start_ns),
                       "dur": (s.end_ns - s.start_ns) / 1000.0, "args": {"then": s.why}})
    for i, e in enumerate(p.watch.signals):
        ev.append({"ph": "i", "s": "t", "pid": 1, "tid": e.sender, "ts": us(e.time_ns),
                   "name": f"tgkill -> {e.target} (sig {e.sig})"})
        if e.delivered_ns is not None:
            ev.append({"ph": "i", "s": "t", "pid": 1, "tid": e.target, "ts": us(e.delivered_ns),
                       "name": f"signal {e.sig} at {e.where}: {e.outcome}", "args": {"oracle": e.oracle}})
            ev.append({"ph": "s", "id": i, "pid": 1, "tid": e.sender, "ts": us(e.time_ns), "name": "signal",
                       "cat": "sig"})
            ev.append({"ph": "f", "bp": "e", "id": i, "pid": 1, "tid": e.target, "ts": us(e.delivered_ns),
                       "name": "signal", "cat": "sig"})
    for r in p.watch.preemptions:
        ev.append({"ph": "i", "s": "t", "pid": 1, "tid": r.tid, "ts": us(r.time_ns),
                   "name": f"asyncPreempt injected at {r.where}", "args": r.to_json()})
    for (t_ns, tid, name, args, res) in p.syscall_log:
        if name in ("nanosleep", "futex", "tgkill", "clone", "exit_group", "write", "epoll_pwait", "sched_yield"):
            ev.append({"ph": "i", "s": "t", "pid": 1, "tid": tid, "ts": us(t_ns), "name": name,
                       "args": {"args": [hex(a) for a in args], "result": str(res)}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"tool": f"preemu {__version__}", "binary": target, "seed": p.opts.seed}}


def write_chrome_trace(path: str, p, target: str) -> None:
    with open(path, "w") as f:
        json.dump(chrome_trace(p, target), f)
