"""Scheduler timelines as files: Chrome Trace Event JSON (opens in Perfetto / chrome://tracing) and
a self-contained SVG picture. Both are built from the scheduler's event list, nothing else.
"""
from __future__ import annotations

import json
from html import escape

from .. import __version__

SYSMON_TID = 100
_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"]
_INSTANTS = {"signal": "SIGURG sent", "preemptone": "preemptone", "inject": "signal: injected asyncPreempt",
             "refuse": "signal refused", "preempt": "preempted", "sleep": "park (sleep)", "ready": "ready (timer)",
             "exit": "goexit", "gc": "GC cycle: suspend every goroutine", "suspendG": "suspendG",
             "scanned": "stack scanned (preemptPark -> resumeG)"}


def _tid(track: str) -> int:
    return SYSMON_TID if track == "sysmon" else int(track[1:]) + 1


def chrome_trace(res, scenario: str, seed: int) -> dict:
    """Return the Trace Event Format object: a track per M plus sysmon, G run slices, instant events."""
    ev = [{"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": f"preemu: {scenario}"}},
          {"ph": "M", "pid": 1, "tid": SYSMON_TID, "name": "thread_name", "args": {"name": "sysmon"}},
          {"ph": "M", "pid": 1, "tid": SYSMON_TID, "name": "thread_sort_index", "args": {"sort_index": 0}}]
    for i in range(res.gomaxprocs):
        ev.append({"ph": "M", "pid": 1, "tid": i + 1, "name": "thread_name", "args": {"name": f"M{i} (P{i})"}})
        ev.append({"ph": "M", "pid": 1, "tid": i + 1, "name": "thread_sort_index", "args": {"sort_index": i + 1}})
    for e in res.events:
        if e["kind"] == "slice":
            ev.append({"ph": "X", "pid": 1, "tid": _tid(e["track"]), "name": e["g"], "cat": "goroutine",
                       "ts": e["t"] / 1000, "dur": max(0.0, (e["end"] - e["t"]) / 1000), "args": {"until": e["why"]}})
        elif e["kind"] in _INSTANTS:
            args = {k: v for k, v in e.items() if k not in ("kind", "t", "track")}
            name = _INSTANTS[e["kind"]]
            if e["kind"] == "preempt":
                name = f"preempted ({e['how']})"
            elif e["kind"] == "refuse":
                name = f"signal refused: {e['reason']}"
            ev.append({"ph": "i", "s": "t", "pid": 1, "tid": _tid(e["track"]), "name": name, "cat": e["kind"],
                       "ts": e["t"] / 1000, "args": args})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"tool": "preemu", "version": __version__, "scenario": scenario, "seed": seed,
                          "gomaxprocs": res.gomaxprocs, "async_preemption": res.async_preemption,
                          "ns_per_insn": res.ns_per_insn}}


def write_chrome_trace(path: str, res, scenario: str, seed: int) -> None:
    with open(path, "w") as f:
        json.dump(chrome_trace(res, scenario, seed), f, indent=0)
        f.write("\n")


def svg(res, title: str, width: int = 1000) -> str:
    """Return an SVG timeline: one row per M (G run slices) plus sysmon, with markers."""
    left, right, row_h, top = 90, 20, 34, 48
    rows = [f"M{i}" for i in range(res.gomaxprocs)] + ["sysmon"]
    height = top + row_h * len(rows) + 80
    dur = max(res.duration_ns, 1)
    x = lambda t: left + (width - left - right) * t / dur  # noqa: E731
    y = {r: top + i * row_h for i, r in enumerate(rows)}
    color = {g.name: _COLORS[i % len(_COLORS)] for i, g in enumerate(res.goroutines)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>']
    for r in rows:
        out.append(f'<text x="8" y="{y[r] + 20}">{r if r == "sysmon" else r + " (P" + r[1:] + ")"}</text>')
        out.append(f'<line x1="{left}" y1="{y[r] + row_h - 4}" x2="{width - right}" y2="{y[r] + row_h - 4}" '
                   f'stroke="#ddd"/>')
    step = 10_000_000 if dur > 30_000_000 else 1_000_000
    t = 0
    while t <= dur:
        out.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{top + row_h * len(rows) - 4}" '
                   f'stroke="#eee"/>')
        out.append(f'<text x="{x(t):.1f}" y="{top + row_h * len(rows) + 12}" text-anchor="middle" '
                   f'font-size="10">{t / 1e6:g} ms</text>')
        t += step
    for e in res.events:
        if e["kind"] == "slice":
            x0, x1 = x(e["t"]), x(e["end"])
            out.append(f'<rect x="{x0:.2f}" y="{y[e["track"]] + 4}" width="{max(x1 - x0, 3.0):.2f}" '
                       f'height="{row_h - 12}" fill="{color[e["g"]]}"><title>{escape(e["g"])} '
                       f'{e["t"] / 1e6:.3f}-{e["end"] / 1e6:.3f} ms ({e["why"]})</title></rect>')
    marks = {"signal": ("#d62728", "v"), "preemptone": ("#888", "|"), "refuse": ("#d62728", "x"),
             "ready": ("#222222", "o")}
    for e in res.events:
        k = e["kind"]
        if k == "preempt":
            c = "#d62728" if e["how"] == "async" else "#7b3294"
            xx, yy = x(e["t"]), y[e["track"]]
            out.append(f'<path d="M{xx:.1f},{yy + 1} l-4,-6 h8 z" fill="{c}"/>')
        elif k in marks:
            c, shape = marks[k]
            xx, yy = x(e["t"]), y[e["track"]] + row_h / 2 - 2
            if shape == "o":
                yy = y[e["track"]] + row_h - 4
                out.append(f'<circle cx="{xx:.1f}" cy="{yy:.1f}" r="3" fill="{c}"/>')
            elif shape == "x":
                out.append(f'<path d="M{xx - 3:.1f},{yy - 3:.1f} l6,6 m0,-6 l-6,6" stroke="{c}" stroke-width="2"/>')
            elif shape == "v":
                out.append(f'<path d="M{xx - 4:.1f},{yy - 5:.1f} h8 l-4,8 z" fill="{c}"/>')
            else:
                out.append(f'<line x1="{xx:.1f}" y1="{yy - 6:.1f}" x2="{xx:.1f}" y2="{yy + 6:.1f}" stroke="{c}"/>')
    ly = top + row_h * len(rows) + 32
    lx = left
    for g in res.goroutines:
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{color[g.name]}"/>'
                   f'<text x="{lx + 16}" y="{ly}">{escape(g.name)}</text>')
        lx += 28 + 7 * len(g.name)
    legend = [("#d62728", "SIGURG sent (sysmon row) / async preemption (M row)"),
              ("#7b3294", "cooperative preemption"), ("#222222", "timer readies a sleeper (dot under the row)")]
    out.append(f'<path d="M{width - 190},{ly - 7} l6,6 m0,-6 l-6,6" stroke="#d62728" stroke-width="2"/>'
               f'<text x="{width - 178}" y="{ly}">signal refused</text>')
    lx, ly = left, ly + 20
    for c, text in legend:
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{c}"/>'
                   f'<text x="{lx + 16}" y="{ly}">{text}</text>')
        lx += 28 + 7 * len(text)
    out.append("</svg>")
    return "\n".join(out) + "\n"
