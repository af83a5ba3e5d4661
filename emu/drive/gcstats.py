"""What the runtime's GC cycles did in a --gc run (realgc.RealGC's records), JSON-ready so that shards carry it
across processes, and merged over a sweep's shards: the report's GC rows (output/realsweep_report.py) and the
JSON's "gc" object. Mirrors nothing in Go; the counts name the runtime's own events (scanstack, suspendG, the
write barrier, mark assists) as realgc.py observes them.
"""
from __future__ import annotations

from collections import Counter

from .gsweep import RealSweep


def gc_stats(sw: RealSweep, listener) -> dict:
    """What the cycles of one run did (JSON-ready: shards carry it across processes)."""
    g = sw.gc
    injected = [pt.boundary for pt in listener.points if pt.event.outcome == "injected"]
    # parked at the injection: gopreempt_m left G _Grunnable, or preemptPark _Gpreempted (suspendG then claims it
    # as _Gwaiting before scanstack)
    parked = [s for s in g.scans if s.status in ("_Grunnable", "_Gwaiting") and s.async_safe_point]
    at_injection = [s for s in g.scans if s.async_safe_point]
    sample = at_injection[len(at_injection) // 2] if at_injection else (g.scans[0] if g.scans else None)
    phases = {0: "_GCoff", 1: "_GCmark", 2: "_GCmarktermination"}
    return {"mode": g.mode, "injections": len(injected), "cycles": g.cycles, "freed": g.freed_total,
            "scans_at_injection": len(parked), "uses_after_free": len(g.uaf),
            "stopped_by": dict(Counter(s.path or "not at an injection" for s in g.scans if s.kind == "async")),
            "sync_stopped_by": dict(Counter(s.path or "not at the call" for s in g.scans if s.kind != "async")),
            "scan_phases": dict(Counter(phases.get(s.phase, str(s.phase)) for s in g.scans)),
            "stw_at_point": sum(1 for pt in listener.points if getattr(pt, "stw", None) is not None),
            "sync_points": sum(1 for pt in listener.points if pt.kind != "async"),
            "sync_sites": len(sw.sync.sites) if sw.sync is not None else 0,
            "cycles_by_kind": dict(g.cycle_kinds),
            "scans_by_kind": dict(Counter(s.kind for s in g.scans)),
            "points": sw.gc_points,
            "kept_by_stale_words": len(g.survivors),
            "quarantined": len(g.quarantine.held) if g.quarantine is not None else 0,
            "unasked": getattr(g, "unasked", 0),
            "survivors": [{"object": f"{sv.obj.addr:#x}", "size": sv.obj.size, "type": sv.obj.type,
                           "kept_at": sv.kept_at, "word": sv.word, "freed_at": sv.obj.boundary}
                          for sv in g.survivors[:SURVIVORS_SHOWN]],
            "mark_instructions": g.mark_insns, "write_barriers": g.barriers["wb"],
            "bulk_barriers": g.barriers["bulk"], "assists": g.barriers["assist"],
            "sample": None if sample is None else {"boundary": sample.boundary, "status": sample.status,
                                                   "path": sample.path, "frames": [list(f) for f in sample.frames]}}


def merge_gc(acc: dict | None, g: dict) -> dict:
    """gc_stats of two chains as one: counts added, the first chain's sample and settings kept."""
    if acc is None:
        acc = {key: 0 for key in _GC_SUMS} | {"mode": g.get("mode", "scan"), "sample": g["sample"],
                                              "points": g.get("points", "all"), "sync_sites": g.get("sync_sites", 0),
                                              "survivors": []}
        acc |= {key: {} for key in _GC_COUNTERS}
    acc = dict(acc)
    for key in _GC_SUMS:
        acc[key] = acc.get(key, 0) + g.get(key, 0)
    for key in _GC_COUNTERS:
        acc[key] = dict(Counter(acc.get(key, {})) + Counter(g.get(key, {})))
    for key in ("sync_sites", "sync_reached", "sync_waiting"):      # set by the one call-site shard
        acc[key] = max(acc.get(key, 0), g.get(key, 0))
    if acc.get("sample") is None:
        acc["sample"] = g.get("sample")
    acc["survivors"] = (acc.get("survivors", []) + g.get("survivors", []))[:SURVIVORS_SHOWN]
    return acc


#: conservative survivors listed in a report (all are counted)
SURVIVORS_SHOWN = 10

#: gc_stats' tallies by name, added key by key
_GC_COUNTERS = ("stopped_by", "sync_stopped_by", "scan_phases", "cycles_by_kind", "scans_by_kind")

#: gc_stats' counts, summed over shards
_GC_SUMS = ("injections", "cycles", "freed", "scans_at_injection", "uses_after_free", "stw_at_point", "unasked",
            "mark_instructions", "write_barriers", "bulk_barriers", "assists", "sync_points", "kept_by_stale_words",
            "quarantined")
