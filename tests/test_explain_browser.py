"""The explain page in a real headless Chromium: step through every step, check what is visible."""
from __future__ import annotations

import io
import json

import browser            # tests/browser.py: Debian's chromium through Playwright
from conftest import ASM, ROOT

from emu import cli


def _write(tmp_path, name, *args):
    html = tmp_path / f"{name}.html"
    out = io.StringIO()
    cli.main(["explain", *map(str, args), "--html", str(html)], out=io.StringIO())
    cli.main(["explain", *map(str, args), "--json"], out=out)
    return html, json.loads(out.getvalue())


def _visible(pg):
    return pg.evaluate("""() => ({
        counter: document.getElementById('counter').textContent,
        title: document.getElementById('step-title').textContent,
        currentPc: (document.querySelector('#code tr.current') || {dataset: {}}).dataset.pc || null,
        regs: Object.fromEntries([...document.querySelectorAll('#regs td[id^=reg-]')].map(
            td => [td.id.slice(4), td.textContent])),
        changed: [...document.querySelectorAll('#regs td.chg')].map(td => td.id.slice(4)),
        verdict: document.getElementById('verdict').textContent,
        checksOk: document.querySelectorAll('#checklist li.ok').length,
        checksBad: document.querySelectorAll('#checklist li.bad').length,
        checksPending: document.querySelectorAll('#checklist li.pending').length,
        svg: document.querySelector('#stack svg').textContent,
    })""")


def _each_step(pg, steps):
    """Step through the page with the arrow key; at each step check the counter, title, highlighted PC
    and registers against the JSON, and yield (index, JSON step, visible state)."""
    for i, st in enumerate(steps):
        if i:
            pg.keyboard.press("ArrowRight")
        v = _visible(pg)
        assert v["counter"] == f"step {i + 1} / {len(steps)}" and v["title"] == st["title"]
        assert int(v["currentPc"], 16) == int(st["pc"], 16), (i, st["title"])
        assert v["regs"] == st["regs"]
        yield i, st, v


def test_page_steps_through_the_whole_story(tmp_path):
    html, d = _write(tmp_path, "adc", ASM / "adc_chain.s", "--func", "adc_chain", "--reg", "RCX=64", "--at", "5")
    steps = d["steps"]
    with browser.page() as (pg, errors):
        pg.goto(html.as_uri())
        v = _visible(pg)
        assert v["counter"] == f"step 1 / {len(steps)}"
        assert "injected" in v["verdict"] and "all checks hold" in v["verdict"]
        assert int(v["currentPc"], 16) == int(d["pc"], 16)
        assert v["checksPending"] == sum(len(s["checks"]) for s in steps)
        for i, st, v in _each_step(pg, steps):
            assert sorted(v["changed"]) == sorted(st["changed"])
            if st["phase"] == "pushCall":
                assert "resume PC (pushCall)" in v["svg"] and f"{int(d['pc'], 16):#x}" in v["svg"]
                assert v["regs"]["RSP"] == st["regs"]["RSP"] != steps[0]["regs"]["RSP"]
            if st["phase"] == "asyncPreempt2":
                assert "RAX" in v["changed"] and "RBP" not in v["changed"]
        assert v["checksOk"] == sum(len(s["checks"]) for s in steps) and v["checksBad"] == 0
        pg.keyboard.press("ArrowRight")                      # past the end: stays on the last step
        assert _visible(pg)["counter"] == f"step {len(steps)} / {len(steps)}"
        pg.keyboard.press("Home")
        assert _visible(pg)["counter"] == f"step 1 / {len(steps)}"
        pg.focus("#next")                                    # keyboard only: Tab-reachable buttons and Enter
        pg.keyboard.press("Enter")
        assert _visible(pg)["counter"] == f"step 2 / {len(steps)}"
        pg.click("#pills li:nth-child(4) button")
        assert _visible(pg)["title"] == steps[3]["title"]
        shot = tmp_path / "explain.png"
        pg.screenshot(path=str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
        assert errors == []


def test_page_of_a_refusal_a_forced_injection_and_a_gc(tmp_path):
    refused, d = _write(tmp_path, "refused", ASM / "call_loop.s", "--func", "call_loop", "--reg", "RCX=5",
                        "--at", "square_add+4")
    forced, f = _write(tmp_path, "forced", ASM / "call_loop.s", "--func", "call_loop", "--reg", "RCX=5",
                       "--at", "square_add+4", "--signal-delay", "1", "--force-unsafe")
    with browser.page() as (pg, errors):
        pg.goto(refused.as_uri())
        assert "refused by Go: unsafe-point" in _visible(pg)["verdict"]
        sig = next(i for i, s in enumerate(d["steps"]) if s["phase"] == "signal")
        for _ in range(sig):
            pg.keyboard.press("ArrowRight")
        row = pg.text_content("#table tr.refuse")
        assert "unsafePoint" in row and "REFUSE: unsafe-point" in row
        assert "golang/go#35470" in pg.text_content("#text")
        pg.goto(forced.as_uri())
        assert "FORCED" in _visible(pg)["verdict"] and "FAILED" in _visible(pg)["verdict"]
        pg.keyboard.press("End")
        v = _visible(pg)
        assert v["checksBad"] == sum(not c["ok"] for s in f["steps"] for c in s["checks"]) >= 1
        assert "no needless stack growth" in " ".join(pg.locator("#checklist li.bad").all_text_contents())
        gc_page, g = _write(tmp_path, "gc", ROOT / "scenarios" / "gc_ptr_in_frame_slot.toml", "--at", "30")
        pg.goto(gc_page.as_uri())
        gc = next(i for i, s in enumerate(g["steps"]) if s["phase"] == "gc")
        pg.click(f"#pills li:nth-child({gc + 1}) button")
        assert pg.locator("#stack rect.mark").count() == len(g["steps"][gc]["stack_marks"]) == 1
        assert "interrupted" in pg.text_content("#table") and "conservative" in pg.text_content("#table")
        assert errors == []


def test_a_scheduler_scenario_page_steps_through_with_the_real_schedulers_choices(tmp_path):
    html, d = _write(tmp_path, "sched", ROOT / "scenarios" / "starvation.toml")
    steps = d["steps"]
    with browser.page() as (pg, errors):
        pg.goto(html.as_uri())
        for i, st, v in _each_step(pg, steps):
            if st["phase"] == "pushCall":
                assert "resume PC (pushCall)" in v["svg"]
        assert "injected" in v["verdict"] and v["checksOk"] == 1 and v["checksBad"] == 0
        assert not errors, errors


def test_schedule_page_draws_a_lane_per_thread_and_walks_the_change_points(tmp_path):
    """`explain --schedule 19 --html` (tests/test_explain_schedule.py): the lanes, the change points on the
    lanes of the threads they stopped, selection by key and by click, the axis switch."""
    from conftest import cli_run
    html = tmp_path / "sched.html"
    args = ["explain", "tests/go/pctlock/lock", "--test", "TestRacyLock", "--schedule", "19"]
    assert cli_run(*args, "--html", html)[0] == 1
    d = json.loads(cli_run(*args, "--json")[1])
    cps = [(i, x) for i, x in enumerate(d["decisions"]) if x["kind"] == "change-point"]
    state = """() => ({
        lanes: [...document.querySelectorAll('#lanes text')].map(t => t.textContent).filter(t => / \\(\\d+\\)$/.test(t)),
        segs: document.querySelectorAll('#lanes rect.seg').length,
        cps: [...document.querySelectorAll('#lanes g.cp')].map(g => [+g.dataset.decision,
              +g.querySelector('circle').getAttribute('cy')]),
        laneY: Object.fromEntries([...document.querySelectorAll('#lanes rect.lane')].map(r => [r.dataset.tid,
              +r.getAttribute('y')])),
        selLane: [...document.querySelectorAll('#lanes rect.lane.sel')].map(r => +r.dataset.tid),
        selCp: [...document.querySelectorAll('#lanes g.cp.sel')].map(g => +g.dataset.decision),
        selLi: [...document.querySelectorAll('#decisions li.sel')].map(li => +li.dataset.decision),
        selChapter: [...document.querySelectorAll('.chapter.sel')].map(c => +c.dataset.endsWith),
        detail: document.getElementById('detail').textContent,
        axis: document.getElementById('axis').textContent,
        verdict: document.getElementById('verdict').textContent,
        replay: document.getElementById('replay').textContent,
    })"""
    with browser.page() as (pg, errors):
        pg.goto(html.as_uri())
        v = pg.evaluate(state)
        assert v["lanes"] == [f"{t['name']} ({t['tid']})" for t in d["threads"]]
        assert v["segs"] == len(d["segments"]) and v["verdict"].startswith("FAILED: exit status 1")
        assert [i for i, _ in v["cps"]] == [i for i, _ in cps]
        for (i, cy), (_, x) in zip(v["cps"], cps):          # each marker sits on its thread's lane
            assert v["laneY"][str(x["tid"])] < cy < v["laneY"][str(x["tid"])] + 34
        first, second = cps[0], cps[1]
        assert v["selCp"] == v["selLi"] == v["selChapter"] == [first[0]] and v["selLane"] == [first[1]["tid"]]
        assert "change point 1" in v["detail"] and "lock.go:16: locked = 1" in v["detail"]
        pg.keyboard.press("ArrowRight")
        v = pg.evaluate(state)
        assert v["selCp"] == v["selLi"] == v["selChapter"] == [second[0]] and v["selLane"] == [second[1]["tid"]]
        assert "change point 2" in v["detail"] and "lock.go:36: inside--" in v["detail"]
        pg.click(f"#decisions li[data-decision='{first[0]}']")
        assert pg.evaluate(state)["selCp"] == [first[0]]
        pg.keyboard.press("t")
        v = pg.evaluate(state)
        assert v["axis"] == "axis: virtual time" and v["segs"] == len(d["segments"]) and len(v["cps"]) == 4
        assert v["replay"] == d["replay"]
        assert not errors, errors
