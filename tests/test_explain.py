"""preemu explain: one preemption told step by step; text, JSON and HTML from one step list."""
from __future__ import annotations

import io
import json
import re
from dataclasses import replace

import pytest

from emu import cli
from emu.drive import episode, loader, sweeper as sweep
from emu.teach import story as explain, html as explain_html, text as explain_text
from emu.check.safepoint import CHECK_ORDER, REASONS, is_async_safe_point, safe_point_checks

from conftest import ASM, DATA, ROOT


def _story(path, func, at, layout="go1.14", stub=None, gc=False, force=False, delay=0, **regs):
    prog = loader.load_program(path)
    w = loader.build_world(prog, func, layout, stub, 1, regs, gc=gc)
    k = episode.resolve_at(w, str(at))
    return explain.explain(w, k, str(path), func, force, 1, delay)


def _cli(*args):
    out = io.StringIO()
    rc = cli.main(list(args), out=out)
    return rc, out.getvalue()


@pytest.fixture(scope="module")
def adc():
    return _story(ASM / "adc_chain.s", "adc_chain", 5, RCX=64)


def test_adc_chain_tells_the_whole_story(adc):
    phases = [s.phase for s in adc.steps]
    order = ["goroutine", "request", "signal", "pushCall", "stub", "asyncPreempt2", "compare", "resume", "end"]
    assert sorted(set(phases) & set(order), key=phases.index) == order
    assert adc.verdict == "injected" and adc.reason == "safe" and adc.ok
    assert len(adc.checks) >= 8 and all(c.ok for c in adc.checks)
    # the interrupted PC is the 6th instruction executed (boundary 5)
    assert adc.pc == adc.steps[0].pc and adc.steps[0].regs["RIP"] == f"{adc.pc:#018x}"


def test_pushcall_step_shows_its_one_write(adc):
    s0 = adc.steps[0]
    S = int(s0.regs["RSP"], 16)
    push = next(s for s in adc.steps if s.phase == "pushCall")
    assert push.changed == ["RSP", "RIP"]
    assert int(push.regs["RSP"], 16) == S - 8
    i = (adc.stack_top - (S - 8)) // 8
    assert push.stack_changed == [i] and int(push.stack[i], 16) == adc.pc
    assert adc.stack_labels[i] == "resume PC (pushCall)"
    assert f"[{S - 8:#x}] = {adc.pc:#x}" in "\n".join(push.text)


def test_stub_frame_table_holds_the_interrupted_values(adc):
    save = next(s for s in adc.steps if s.phase == "stub" and s.table)
    before = adc.steps[0].regs
    rows = {r[2].split()[0]: r[3] for r in save.table["rows"]}
    assert rows["AX"] == before["RAX"] and rows["R15"] == before["R15"]
    assert rows["X3"] == before["XMM3"]
    assert int(rows["RFLAGS"], 16) == int(before["RFLAGS"], 16)


def test_async_preempt2_clobbers_and_migrates(adc):
    ap2 = next(s for s in adc.steps if s.phase == "asyncPreempt2")
    assert ap2.mp == "M1/P1" and adc.steps[0].mp == "M0/P0"
    assert {"RAX", "R15", "RFLAGS", "XMM0", "XMM15"} <= set(ap2.changed)
    assert "RBP" not in ap2.changed
    resume = next(s for s in adc.steps if s.phase == "resume")
    assert resume.regs == {**adc.steps[0].regs, "RIP": resume.regs["RIP"]}
    assert int(resume.regs["RIP"], 16) == adc.pc


def test_a_stack_word_is_named_only_from_the_step_that_gives_it_its_role(adc):
    steps = adc.steps
    push = next(i for i, s in enumerate(steps) if s.phase == "pushCall")
    named = [{x for x in s.stack_labels if x} for s in steps]
    for i in range(push):                    # the goroutine, the request, the signal: nothing below SP yet
        assert not any("pushCall" in x or "PUSH" in x or "(SP)" in x or "asyncPreempt" in x for x in named[i])
    assert "return address (caller)" in named[0]
    assert "resume PC (pushCall)" in named[push] and "saved RBP (PUSHQ BP)" not in named[push]
    # each save slot from the stub step that writes it; the CALL's return address from asyncPreempt2
    rbp = next(i for i, s in enumerate(steps) if "saved RBP (PUSHQ BP)" in s.stack_labels)
    assert steps[rbp].phase == "stub"
    assert steps[rbp].stack_labels.index("saved RBP (PUSHQ BP)") in steps[rbp].stack_changed
    ap2 = next(i for i, s in enumerate(steps) if s.phase == "asyncPreempt2")
    assert "return into asyncPreempt (CALL)" in named[ap2] and "return into asyncPreempt (CALL)" not in named[ap2 - 1]
    assert named[-1] == {x for x in adc.stack_labels if x}
    d = explain_text.to_json(adc)
    assert [s["stack_labels"] for s in d["steps"]] == [s.stack_labels for s in steps]


def test_text_json_html_come_from_one_step_list(adc):
    text = explain_text.render_text(adc)
    data = explain_text.to_json(adc)
    titles = re.findall(r"^\[\d+/\d+\] (.*?)    \(", text, re.M)
    assert titles == [s["title"] for s in data["steps"]] == [s.title for s in adc.steps]
    page = explain_html.render(adc)
    embedded = re.search(r'<script id="story" type="application/json">(.*?)</script>', page, re.S).group(1)
    assert json.loads(embedded.replace("<\\/", "</")) == json.loads(json.dumps(data))
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in page


def test_explain_agrees_with_the_sweep_verdict_at_every_pc():
    path = ASM / "call_loop.s"
    prog = loader.load_program(path)
    w = loader.build_world(prog, "call_loop", registers={"RCX": 2})
    res = sweep.sweep(w, "call_loop", 1, 100_000)
    first = sweep.first_boundaries(w, res.reference.boundaries)
    pcs = [pc for pc in first if prog.insn_at(pc) is not None][:12] + \
        [pc for pc, st in res.per_pc.items() if "unsafe-point" in st.verdicts][:3]
    for pc in pcs:
        story = explain.explain(w, first[pc], str(path), "call_loop")
        expect = res.per_pc[pc].verdicts.most_common(1)[0][0]
        assert story.reason == expect, (hex(pc), story.reason, expect)
        assert story.ok


def test_check_order_lists_every_refusal_and_follows_go():
    listed = [r for _, reasons in CHECK_ORDER for r in reasons]
    assert sorted(listed) == sorted(set(REASONS) - {"safe", "asyncpreemptoff", "no-request"})
    assert set(explain.CHECK_QUESTIONS) == {c for c, _ in CHECK_ORDER} | {"other"}
    prog = loader.load_program(ASM / "unsafe_points.s")
    w = loader.build_world(prog, "unsafe_tour", registers={})
    w.preempt_one()
    st = w.sched_state()
    ok_sp, low_sp = w.machine.reg("RSP"), st.stack_lo + 8
    safe_pc = prog.get_func("unsafe_tour").start
    unsafe_pc = prog.get_func("atomic_or32").start
    asm_runtime_pc = prog.get_func("memclr").start              # assembly AND runtime.: asm comes first
    runtime_pc = next(i.addr for i in prog.get_func("unsafe_tour").insns if i.inline)   # runtime.add inlined
    runtime_go_pc = prog.get_func("procyield").start            # Go code of package runtime: every PC unsafe
    # two refusals at once: the one Go checks first must win, and the trace must stop there
    cases = [(replace(st, m_curg=0, m_locks=1), safe_pc, ok_sp, "not-curg"),
             (replace(st, m_locks=1, m_mallocing=1), safe_pc, low_sp, "m-locks"),
             (st, unsafe_pc, low_sp, "stack-headroom"),
             (st, 0x10, low_sp, "stack-headroom"),
             (st, asm_runtime_pc, ok_sp, "asm-func"),
             (st, runtime_pc, ok_sp, "runtime-func"),
             (st, runtime_go_pc, ok_sp, "unsafe-point"),
             (st, unsafe_pc, ok_sp, "unsafe-point"),
             (st, safe_pc, ok_sp, "safe")]
    for state, pc, sp, want in cases:
        assert is_async_safe_point(prog, state, pc, sp, w.headroom).reason == want
        trace = safe_point_checks(prog, state, pc, sp, w.headroom)
        assert [r for _, r in trace[:-1]] == [None] * (len(trace) - 1)
        assert trace[-1][1] == (None if want == "safe" else want)
        assert len(trace) == (len(CHECK_ORDER) if want == "safe" else
                              1 + next(i for i, (_, rs) in enumerate(CHECK_ORDER) if want in rs))


def test_refused_pc_names_the_rule_and_why():
    story = _story(ASM / "call_loop.s", "call_loop", "square_add+4", RCX=5)
    assert story.verdict == "refused" and story.reason == "unsafe-point"
    sig = next(s for s in story.steps if s.phase == "signal")
    outcome = {r[0]: r[-1] for r in sig.table["rows"]}
    assert outcome["findfunc"] == "pass" and outcome["unsafePoint"] == "REFUSE: unsafe-point"
    assert outcome["asm"] == outcome["runtime"] == "not reached"
    assert "golang/go#35470" in " ".join(sig.text)
    assert not any(s.phase in ("pushCall", "stub") for s in story.steps)
    ack = next(s for s in story.steps if s.phase == "ack")
    assert ack.checks[0].ok and story.ok


def test_force_unsafe_in_the_prologue_window_shows_the_damage():
    rc, out = _cli("explain", str(ASM / "call_loop.s"), "--func", "call_loop", "--reg", "RCX=5",
                   "--at", "square_add+4", "--signal-delay", "1", "--force-unsafe")
    assert rc == 1
    assert "verdict: FORCED" in out
    assert "[FAIL] no needless stack growth" in out and "golang/go#35470" in out


@pytest.mark.parametrize("args, reason, failed, detail", [
    (("unsafe_points.s", "unsafe_tour", "RCX=2", "store_pointer+7", "--signal-delay", "1", "--gc-during-preemption"),
     "unsafe-point", "pointer stores go through the write barrier", "mov qword ptr [rdi], rsi"),
    (("unsafe_damage.s", "big_frame", "RCX=3", "big_frame+7"),
     "stack-headroom", "stub runs without faulting", "(guard page: "),
    (("unsafe_damage.s", "below_sp", "RCX=3", "2"),
     "asm-func", "final registers equal the uninterrupted run", "RBP: expected"),
])
def test_force_unsafe_shows_each_class_of_damage(args, reason, failed, detail):
    """The forced-injection table (docs/explanation/how-a-point-is-checked.md), one story each (the prologue window is tested above)."""
    file, func, reg, at, *extra = args
    rc, out = _cli("explain", str(ASM / file), "--func", func, "--reg", reg, "--at", at, *extra)
    assert rc == 0 and f"verdict: refused by Go ({reason})" in out
    rc, out = _cli("explain", str(ASM / file), "--func", func, "--reg", reg, "--at", at, *extra, "--force-unsafe")
    assert rc == 1 and f"[FAIL] {failed}: " in out and detail in out.split(f"[FAIL] {failed}: ")[1].split("\n")[0]


def test_a_stub_without_pushfq_fails_the_rflags_check():
    story = _story(ASM / "adc_chain.s", "adc_chain", 5, stub=DATA / "stub_no_pushfq.s", RCX=64)
    failed = {c.name for c in story.checks if not c.ok}
    assert "RFLAGS bit-exact" in failed and "14 GPRs bit-exact" not in failed
    cmp = next(s for s in story.steps if s.phase == "compare")
    assert ["RFLAGS"] == [r[0] for r in cmp.table["rows"] if r[-1] == "DIFFERS"]


def test_gc_lists_frames_and_objects():
    rc, out = _cli("explain", str(ROOT / "scenarios" / "gc_ptr_in_frame_slot.toml"), "--at", "30", "--json")
    assert rc == 0
    d = json.loads(out)
    gc = next(s for s in d["steps"] if s["phase"] == "gc")
    kinds = {r[1]: r[4] for r in gc["table"]["rows"]}
    assert kinds["interrupted"].startswith("conservative") and kinds["asyncPreempt2"].startswith("precise")
    roots = [re.search(r"root: interrupted frame ptr_in_frame_slot \[(0x[0-9a-f]+)\] -> object (0x[0-9a-f]+)", t)
             for t in gc["text"]]
    slot, obj = next(m.groups() for m in roots if m)
    assert int(slot, 16) == int(d["steps"][0]["rsp"], 16)           # the frame's own slot, at S
    assert any(f"marked 1 object(s): {obj}" in t for t in gc["text"])
    assert any(c["name"] == "no use of freed objects" and c["ok"] for s in d["steps"] for c in s["checks"])


def test_a_sweep_scenario_explains_with_its_own_gc_scanner(tmp_path):
    """The scenario's gc_scanner is the one explained: the skip-save-area mutant loses the object held
    only in R12 (saved in the asyncPreempt frame), so the story ends on a use of freed memory."""
    text = (ROOT / "scenarios" / "gc_ptr_in_reg.toml").read_text().replace('asm = "../asm/', f'asm = "{ASM}/')
    for scanner, rc_want in (("go", 0), ("skip-save-area", 1)):
        sc = tmp_path / f"{scanner}.toml"
        sc.write_text(text.replace("gc = true", f'gc = true\ngc_scanner = "{scanner}"'))
        rc, out = _cli("explain", str(sc), "--at", "12", "--json")
        d = json.loads(out)
        freed = [c for s in d["steps"] for c in s["checks"] if c["name"] == "no use of freed objects"]
        assert rc == rc_want and freed and freed[-1]["ok"] == (rc_want == 0), (scanner, out[-400:])


def test_go127_layout_saves_vectors_in_the_p():
    story = _story(ASM / "adc_chain.s", "adc_chain", 5, layout="go1.27", RCX=64)
    assert story.ok
    assert any(s.short == "find xRegs" for s in story.steps)
    rows = [s for s in story.steps if s.short == "save"][-1].table["rows"]
    x3 = next(r for r in rows if r[2].startswith("X3 (P0 scratch)"))
    assert x3[3] == story.steps[0].regs["XMM3"]


def test_bad_input_is_a_clear_error(capsys):
    rc, _ = _cli("explain", str(ASM / "adc_chain.s"), "--func", "adc_chain", "--reg", "RCX=4", "--at", "99999")
    assert rc == 2 and "the goroutine ends after" in capsys.readouterr().err
    rc, _ = _cli("explain", str(ASM / "adc_chain.s"), "--func", "adc_chain", "--reg", "RCX=4")
    assert rc == 2 and "--at is required" in capsys.readouterr().err     # (a scheduler scenario needs none)
    rc, _ = _cli("explain", str(ASM / "adc_chain.s"), "--at", "1")
    assert rc == 2 and "--func" in capsys.readouterr().err
    rc, _ = _cli("explain", str(ASM / "adc_chain.s"), "--func", "adc_chain", "--reg", "RCX=4", "--at", "3",
                 "--signal-delay", "5")
    assert rc == 2 and "--signal-delay 5" in capsys.readouterr().err
    rc, _ = _cli("explain", str(ASM / "adc_chain.s"), "--func", "adc_chain", "--reg", "RCX=4", "--at", "3",
                 "--html", "/nonexistent-dir/x.html")
    assert rc == 2 and "no such directory" in capsys.readouterr().err


def test_the_tutorials_explain_example_is_real_output(monkeypatch):
    text = (ROOT / "docs" / "tutorial" / "2-prologue-window.md").read_text()
    m = re.search(r"```\n\$ preemu (explain [^\n]*)\n(.*?)```", text, re.S)
    assert m, "the tutorial's step 2 has a `$ preemu explain` block"
    monkeypatch.chdir(ROOT)
    rc, out = _cli(*m.group(1).split())
    assert rc == 0 and out == m.group(2)


def test_asyncpreemptoff_scenario_ignores_the_signal_without_acknowledging():
    rc, out = _cli("explain", str(ROOT / "scenarios" / "asyncpreemptoff.toml"), "--at", "7", "--json")
    d = json.loads(out)
    assert rc == 0 and d["verdict"] == "refused" and d["reason"] == "asyncpreemptoff"
    sig = next(s for s in d["steps"] if s["phase"] == "signal")
    assert [r[0] for r in sig["table"]["rows"]] == ["asyncpreemptoff"]
    ack = next(s for s in d["steps"] if s["phase"] == "ack")
    assert "m.preemptGen stays 0" in ack["text"][0] and ack["checks"][0]["ok"]
    rc, out = _cli("explain", str(ROOT / "scenarios" / "asyncpreemptoff.toml"), "--at", "7",
                   "--async-preemption", "on")
    assert rc == 0 and "verdict: injected" in out


def test_go114s_handler_does_not_check_asyncpreemptoff_and_the_story_says_so():
    """Go 1.14's sighandler ran doSigPreempt even with GODEBUG=asyncpreemptoff=1 (golang/go#38531, fixed in
    Go 1.15): with the go1.14 layout the signal is injected, the table's first row says the check did not
    exist, and the other checks follow (this once stopped explain with an internal error)."""
    args = ("explain", str(ROOT / "asm" / "adc_chain.s"), "--func", "adc_chain", "--reg", "RCX=64", "--at", "5",
            "--async-preemption", "off", "--json")
    rc, out = _cli(*args)
    d = json.loads(out)
    assert rc == 0 and d["verdict"] == "injected" and d["reason"] == "safe"
    rows = next(s for s in d["steps"] if s["phase"] == "signal")["table"]["rows"]
    assert rows[0][0] == "asyncpreemptoff" and "not checked before Go 1.15" in rows[0][-1]
    assert rows[1][0] == "wantAsyncPreempt" and all(r[-1].startswith("pass") for r in rows)
    rc, out = _cli(*args[:-1], "--layout", "go1.27", "--json")
    assert rc == 0 and json.loads(out)["reason"] == "asyncpreemptoff"


def test_a_go_program_is_told_from_its_real_program():
    """A Go package directory: the real program's preemption (emu/teach/real.py; tests/test_gexplain.py
    has the details), the binary's own runtime.asyncPreempt with its Go assembly source in the code."""
    rc, out = _cli("explain", str(ROOT / "tests" / "go" / "corpus"), "--func", "buildList", "--reg", "RAX=5",
                   "--at", "40", "--json")
    d = json.loads(out)
    assert rc == 0 and d["ok"] and d["layout"] == "real program" and d["func"] == "main.buildList"
    assert "doSigPreempt" in [s["short"] for s in d["steps"]]
    stub = d["code"]["runtime.asyncPreempt"]["insns"]
    assert stub[0]["source"] == "PUSHQ BP" and "preempt_amd64.s" in stub[0]["file"]


def test_a_sweep_scenarios_stack_size_is_the_explained_goroutines(tmp_path):
    base = f'name = "t"\nasm = "{ASM / "sum_loop.s"}"\nentry = "sum_loop"\n[registers]\nRCX = 3\n'
    rows = {}
    for size in (2048, 8192):
        (tmp_path / f"s{size}.toml").write_text(f"stack_size = {size}\n" + base)
        rc, out = _cli("explain", str(tmp_path / f"s{size}.toml"), "--at", "3", "--json")
        signal = next(s for s in json.loads(out)["steps"] if s["phase"] == "signal")
        rows[size] = next(r for r in signal["table"]["rows"] if r[0] == "stack")[3]
        assert rc == 0
    room = {k: int(v.split("=")[1].split()[0]) for k, v in rows.items()}      # "sp - lo = N vs 472"
    assert room[8192] - room[2048] == 8192 - 2048
