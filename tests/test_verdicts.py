"""What a real-program sweep says it saw (issue #35 items 3 and 4).

Item 3: an injection's path is observed, not assumed. watch.py hooks asyncPreempt2's entry and the
functions its mcall deschedules the goroutine with (goschedImpl for gopreempt_m, preemptPark): a stub
that returns without entering asyncPreempt2 is `no-asyncPreempt2` on Go input as it is on `.s` input, one
whose goroutine was never descheduled is `not-descheduled`, and the report's injected line claims the
chain only for the injections seen to take it.

Item 4: a run that ends in a crash is told in the runtime's own words (emu/goruntime/crashtext.py): its
message, the faulting goroutine's top frames, how the process ended, on the violation (`facts`) and in
the text report.
"""
import dataclasses
import io
import json
from collections import Counter

import pytest

from emu import cli
from emu.check import verify
from emu.drive.gsweep import Ending
from emu.front import gobuild
from emu.linux import elfimage, process
from emu.goruntime.goprocess import GoProcess
from emu.goruntime import crashtext

KINDS = "tests/data/go/kinds"
CRASHES = "tests/data/go/crashes"
RET_ONLY = "tests/data/stub_ret_only.s"


def run(*args):
    out = io.StringIO()
    code = cli.main(list(args), out)
    return code, out.getvalue()


# --- item 3: the stub must reach the scheduler ------------------------------------------------------------

def test_a_stub_that_only_returns_fails_on_go_input():
    code, text = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=10", "--stub", RET_ONLY)
    assert code == 1, text
    assert "no-asyncPreempt2 asyncPreempt2: 107 injection point(s); first at boundary 0, pc 0x" in text
    assert "(tests/data/go/kinds/main.go:" in text
    # the injected line claims what was seen: no injection went through asyncPreempt2
    assert "pushCall -> asyncPreempt -> asyncPreempt2" not in text
    assert "    descheduled " not in text
    assert "    no-asyncPreempt2       107   the stub returned without entering asyncPreempt2" in text


def test_the_ret_only_violations_name_each_point():
    code, text = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=3", "--stub", RET_ONLY, "--json")
    j = json.loads(text)
    assert code == 1 and not j["ok"]
    vs = [v for v in j["violations"] if v["kind"] == "no-asyncPreempt2"]
    assert len(vs) == j["injected"] == j["violation_count"] > 0
    assert [v["boundary"] for v in vs] == list(range(len(vs)))
    assert all(v["pc"].startswith("0x4") and v["where"].startswith("tests/data/go/kinds/main.go:") for v in vs)
    assert all("facts" not in v for v in j["violations"])


def test_a_stub_that_loses_a_register_still_fails_only_for_the_register(tmp_stub):
    def edit(src):
        return src.replace("    mov rbx, qword ptr [rsp + 24]", "    mov rbx, qword ptr [rsp + 16]")
    code, text = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=10", "--stub", str(tmp_stub(edit)))
    assert code == 1 and "register RBX:" in text
    assert "no-asyncPreempt2" not in text and "not-descheduled" not in text
    assert "    descheduled            107   asyncPreempt2 -> off the CPU" in text


@pytest.mark.parametrize("stub", [None, "generated"])
def test_the_binarys_stub_and_the_generated_one_go_through_the_scheduler(stub):
    code, text = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=10", *(["--stub", stub] if stub else []))
    assert code == 0 and "OK:" in text, text
    assert "  injected                 107   the runtime's sighandler accepted: pushCall -> asyncPreempt\n" in text
    assert ("    descheduled            107   asyncPreempt2 -> off the CPU (goschedImpl or preemptPark) -> schedule "
            "-> back at RET\n") in text
    assert "not resumed" not in text


def test_an_injection_never_descheduled_is_a_violation(monkeypatch):
    """asyncPreempt2 entered, the goroutine back at the RET without goschedImpl or preemptPark having run for it
    (made here by not seeing them: the hooks on them do nothing)."""
    from emu.goruntime import watch
    monkeypatch.setattr(watch.Watch, "_on_deschedule", lambda *a: None)
    code, text = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=3")
    assert code == 1
    assert "not-descheduled schedule: 37 injection point(s); first at boundary 0" in text
    assert "    not-descheduled         37   asyncPreempt2 entered, never descheduled, back at RET" in text
    assert "not-descheduled" in verify.KINDS and "no-asyncPreempt2" not in text


def test_the_watch_names_the_descheduler_of_each_injection():
    """Outside a sweep (no listener) the path is on each Preemption, and a bad one is the watch's violation."""
    from emu.drive import realsweep
    sw = realsweep.RealSpec(KINDS, "spin", 1, (("RAX", 3),), None, ("prog",)).build()
    sw.reference(10**7)
    chain_listener, _, _ = sw.chain(range(0, 5), {})
    assert chain_listener.paths == Counter(descheduled=5)
    recs = [r for r in sw.p.watch.preemptions if r.g == sw.g]
    assert recs and all(r.entered and r.descheduled == "goschedImpl" and r.path == "descheduled" for r in recs)
    assert not sw.p.watch.violations


def test_explain_of_go_input_tells_the_path_it_saw():
    def explain(*args):
        out = io.StringIO()
        return cli.main(["explain", KINDS, "--func", "spin", "--reg", "RAX=3", "--at", "5", "--json", *args], out), \
            json.loads(out.getvalue())
    code, d = explain()
    ap2 = next(s for s in d["steps"] if s["phase"] == "asyncPreempt2")
    assert code == 0 and ap2["title"] == "asyncPreempt2 -> goschedImpl -> schedule, and back"
    assert [c["ok"] for c in ap2["checks"]] == [True]
    code, d = explain("--stub", RET_ONLY)
    ap2 = next(s for s in d["steps"] if s["phase"] == "asyncPreempt2")
    assert code == 1 and ap2["title"] == "asyncPreempt2 was never entered"
    assert "schedule" not in " ".join(ap2["text"]) or "never ran" in " ".join(ap2["text"])
    assert [c["ok"] for c in ap2["checks"]] == [False]


# --- item 4: crashes in the runtime's own words -----------------------------------------------------------

@pytest.fixture(scope="module")
def crashed():
    """crashed(mode, env=()) -> the gsweep.Ending of tests/data/go/crashes run with that argument."""
    image = elfimage.load(str(gobuild.build(CRASHES).binary))
    cache = {}

    def get(mode: str, *env: str) -> Ending:
        if (mode, env) not in cache:
            p = GoProcess(image, process.Options(argv=["prog", mode], env=list(env), budget=2_000_000)).run()
            cache[mode, env] = Ending.of(p)
        return cache[mode, env]
    return get


def test_a_panic_is_its_message_and_the_goroutines_frames(crashed):
    c = crashtext.describe(crashed("panic"))
    assert (c.kind, c.message, c.exit_code, c.signal) == ("panic", "panic: boom 7", 2, None)
    assert c.goroutine == "goroutine 1 [running]" and c.frames == ["main.level2", "main.level1", "main.main"]
    assert c.summary() == "panic: boom 7 in main.level2 (goroutine 1 [running]); exit status 2"


def test_a_fault_keeps_its_signal_line(crashed):
    c = crashtext.describe(crashed("nil"))
    assert c.message == "panic: runtime error: invalid memory address or nil pointer dereference"
    assert len(c.context) == 1 and c.context[0].startswith("[signal SIGSEGV: segmentation violation code=0x1 addr=0x8")
    assert "[signal SIGSEGV" in c.summary()


def test_a_fatal_error_is_a_fatal_error_and_frames_stop_at_five(crashed):
    c = crashtext.describe(crashed("throw"))
    assert (c.kind, c.message) == ("fatal error", "fatal error: sync: unlock of unlocked mutex")
    assert c.frames == ["internal/sync.fatal", "internal/sync.(*Mutex).unlockSlow", "internal/sync.(*Mutex).Unlock",
                        "sync.(*Mutex).Unlock", "main.level2"]               # six in the traceback: five kept


def test_recovered_and_nested_panics(crashed):
    c = crashtext.describe(crashed("repanic"))
    assert c.message == "panic: again [recovered, repanicked]" and c.frames[:2] == ["main.level2.func1", "panic"]
    c = crashtext.describe(crashed("nested"))
    assert c.message == "panic: first" and c.context == ["panic: second"]


def test_a_fatal_error_while_a_panic_is_under_way_heads_the_message(crashed):
    c = crashtext.describe(crashed("fatalinpanic"))       # "panic: first\n\tfatal error: ..." (printPreFatalDeferPanic)
    assert (c.kind, c.message, c.context) == ("fatal error", "fatal error: sync: unlock of unlocked mutex",
                                               ["panic: first"])


def test_the_runtimes_deadlock_and_a_goroutines_creator(crashed):
    c = crashtext.describe(crashed("deadlock"))
    assert c.message == "fatal error: all goroutines are asleep - deadlock!"
    assert c.goroutine == "goroutine 1 [chan receive]"
    c = crashtext.describe(crashed("goroutine"))
    assert c.message == "panic: assignment to entry in nil map" and c.frames == ["main.level2.func4"]
    assert c.goroutine.startswith("goroutine ") and c.goroutine.endswith(" [running]") and c.goroutine != \
        "goroutine 1 [running]"
    assert c.created_by == "main.level2 in goroutine 1"


def test_a_death_by_a_signal_with_and_without_the_runtimes_words(crashed):
    c = crashtext.describe(crashed("kill"))
    assert (c.kind, c.signal, c.signal_name, c.exit_code, c.message) == ("killed", 9, "SIGKILL", 137, "")
    assert c.summary() == "killed by signal 9 (SIGKILL)"
    c = crashtext.describe(crashed("panic", "GOTRACEBACK=crash"))       # the runtime's crash(): SIGABRT after
    assert (c.kind, c.signal, c.message) == ("panic", 6, "panic: boom 7")
    assert c.goroutine == "goroutine 1 [running]"                       # gp=, m=, mp= dropped
    assert c.summary().endswith("; killed by signal 6 (SIGABRT)")


def test_a_blocked_fault_kills_with_the_kernels_reason():
    p = GoProcess(elfimage.load(str(gobuild.build("tests/data/go/blockedsegv").binary)),
                        process.Options(argv=["prog"])).run()
    c = crashtext.describe(Ending.of(p))
    assert c.kind == "killed" and c.signal == 11 and c.summary().startswith(
        "killed by signal 11 (SIGSEGV): read of unmapped address 0x8")


def test_a_hang_and_a_clean_exit(crashed):
    c = crashtext.describe(crashed("spin"))
    assert (c.kind, c.exit_code) == ("hang", None)
    assert c.summary() == "the program did not end: reached the instruction budget (2000000)"
    assert crashtext.describe(crashed("exit")) is None                  # exit status 3, a usage line: no crash
    assert crashtext.describe(crashed("none")) is None
    dead = Ending(None, b"", b"", "error: deadlock: every thread waits with no timeout (1000: futex)")
    assert crashtext.describe(dead).kind == "hang"
    assert crashtext.describe(Ending(None, b"", b"", "interrupted (Ctrl-C)")) is None


def test_what_a_throws_caller_printed_above_it_is_context():
    err = b"start\n\nwhat the caller said\nand more\nfatal error: bad\n\ngoroutine 1 [running]:\nmain.f()\n\tx.go:1\n"
    c = crashtext.describe(Ending(2, b"", err, "exit"))
    assert c.context == ["what the caller said", "and more"]              # up to the blank line above
    err = b"".join(b"said %d\n" % i for i in range(12)) + b"fatal error: bad\n"
    c = crashtext.describe(Ending(2, b"", err, "exit"))
    assert c.context == [f"said {i}" for i in range(12 - crashtext.DIAGNOSTIC_LINES, 12)]


def test_the_runtimes_last_words_before_an_abort():
    """morestack on g0: writeErrStr("fatal: morestack on g0") (proc.go:604), then abort()'s trap kills."""
    c = crashtext.describe(Ending(133, b"", b"fatal: morestack on g0\n", "killed by signal 5 (SIGTRAP)"))
    assert (c.kind, c.message, c.signal) == ("fatal error", "fatal: morestack on g0", 5)
    assert c.summary() == "fatal: morestack on g0; killed by signal 5 (SIGTRAP)"


def test_an_unexpected_fault_address_is_context_of_its_fatal_error():
    p = GoProcess(elfimage.load(str(gobuild.build("tests/data/go/nxjump").binary)),
                        process.Options(argv=["prog"])).run()
    c = crashtext.describe(Ending.of(p))
    assert c.message == "fatal error: fault" and c.context[0].startswith("unexpected fault address 0x")
    assert c.context[1].startswith("[signal SIGSEGV: segmentation violation code=0x2")
    assert c.frames[:3] == ["runtime.throw", "runtime.sigpanic", "main.main"]


# What the runtime prints where no test program here gets it to: fatalsignal (runtime/signal_unix.go:847-856)
# and a throw on the system stack, with the runtime's own diagnostics before it (panic.go dopanic_m).
FATALSIGNAL = b"""SIGSEGV: segmentation violation
PC=0x4011f3 m=3 sigcode=1 addr=0x0

goroutine 0 gp=0xc000006c40 m=3 mp=0xc000080008 [idle]:
runtime.mstart1()
\truntime/proc.go:1800 +0x10
"""
SYSTEMSTACK = b"""program output
runtime: pointer 0xc000100000 to unused region of span span.base()=0xc000100000
fatal error: found bad pointer in Go heap (incorrect use of unsafe or cgo?)

runtime stack:
runtime.throw({0x4b2e1a?, 0x0?})
\truntime/panic.go:1243 +0x48 fp=0x7ffd sp=0x7ffc pc=0x4390a8
runtime.badPointer(0x7f0000000000, 0xc000100000, 0x0, 0x0)
\truntime/mbitmap.go:300 +0x150 fp=0x7ffe sp=0x7ffd pc=0x413d10
...additional frames elided...

goroutine 1 gp=0xc000002380 m=0 mp=0x5a3b20 [running]:
runtime.systemstack_switch()
\truntime/asm_amd64.s:479 fp=0xc0000 sp=0xc0000 pc=0x467e40
"""


def test_fatalsignal_and_a_throw_on_the_system_stack():
    c = crashtext.describe(Ending(2, b"", FATALSIGNAL, "exit"))
    assert (c.kind, c.message, c.context) == ("fatal signal", "SIGSEGV: segmentation violation",
                                               ["PC=0x4011f3 m=3 sigcode=1 addr=0x0"])
    assert c.goroutine == "goroutine 0 [idle]" and c.frames == ["runtime.mstart1"]
    c = crashtext.describe(Ending(2, b"", SYSTEMSTACK, "exit"))
    assert c.message == "fatal error: found bad pointer in Go heap (incorrect use of unsafe or cgo?)"
    assert c.context == ["runtime: pointer 0xc000100000 to unused region of span span.base()=0xc000100000"]
    assert c.runtime_stack == ["runtime.throw", "runtime.badPointer"]          # "...additional frames elided..."
    assert c.goroutine == "goroutine 1 [running]" and c.frames == ["runtime.systemstack_switch"]
    assert c.summary() == ("fatal error: found bad pointer in Go heap (incorrect use of unsafe or cgo?) in "
                           "runtime.badPointer (runtime stack); exit status 2")
    # the program's own words are no message; with another exit status no crash is read at all
    assert crashtext.describe(Ending(1, b"", b"panic: not the runtime\n", "exit")) is None


def test_the_stderr_tail_is_bounded():
    err = b"".join(b"line %d %s\n" % (i, b"x" * 300) for i in range(50)) + b"fatal error: stop\n"
    c = crashtext.describe(Ending(2, b"", err, "exit"))
    assert len(c.stderr_tail) == crashtext.TAIL_LINES and c.stderr_tail[-1] == "fatal error: stop"
    assert all(len(ln) <= crashtext.LINE_CHARS for ln in c.stderr_tail) and c.stderr_tail[0].endswith("...")
    long = crashtext.describe(Ending(2, b"", b"panic: " + b"y" * 1000 + b"\n", "exit"))
    assert len(long.summary()) == crashtext.SUMMARY_CHARS


@pytest.fixture(scope="module")
def kinds_sweep():
    from emu.drive import realsweep
    return realsweep.RealSpec(KINDS, "spin", 1, (("RAX", 3),), None, ("prog",)).build()


def test_crash_violation_carries_the_facts_and_the_report_prints_them(crashed, kinds_sweep):
    from emu.output import report
    sw = kinds_sweep
    v = crashtext.crash_violation(sw, crashed("throw"), 7, sw.entry, "one injection at this boundary, then on to "
                                  "the exit")
    assert (v.kind, v.what, v.boundary, v.pc) == ("final-state", "control flow", 7, sw.entry)
    from emu.drive import references
    assert references.key_of(v.what) is None                  # not a value the references could call unstable
    assert v.actual == ("fatal error: sync: unlock of unlocked mutex in internal/sync.(*Mutex).unlockSlow (goroutine 1 "
                        "[running]); exit status 2")          # sync's fatal, the runtime's machinery, looked past
    assert v.detail == "one injection at this boundary, then on to the exit" and v.where.startswith(KINDS)
    j = v.to_json()
    assert list(j) == "kind what expected actual boundary pc insn where detail facts".split()
    assert j["facts"]["crash"]["frames"][-1] == "main.level2" and json.loads(json.dumps(j)) == j
    text = "\n".join(report.failure_lines([v], 1, {(v.kind, v.what): 1}))
    assert "      runtime  fatal error: sync: unlock of unlocked mutex\n" in text
    assert "      frames   goroutine 1 [running]: internal/sync.fatal <- internal/sync.(*Mutex).unlockSlow <- " in text
    assert text.endswith("      ended    exit status 2")
    assert crashtext.crash_violation(sw, crashed("exit"), 7, sw.entry, "x") is None
    plain = dataclasses.replace(v, facts=None)
    assert list(plain.to_json()) == "kind what expected actual boundary pc insn where detail".split()
    assert verify.Violation(**{**j, "pc": int(j["pc"], 16)}) == v       # as shards.shard_from_json rebuilds it


def test_a_crashing_stub_is_told_in_the_runtimes_words():
    """A stub that zeroes R14 (g): the goroutine dies of a nil dereference after the injection. The chain's
    F-never-returned violation and a to-exit run's ending, as realsweep reports them with crash_violation."""
    stub = "tests/data/stub_zero_r14.s"
    code, text = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=10", "--stub", stub, "--max-points", "3",
                     "--to-exit", "0")
    assert code == 1
    # the second injection calls asyncPreempt2 with R14 = 0: mcall faults, and the panic's own unwinder throws
    assert "  final-state control flow: 1 injection point(s); first at boundary 1, pc 0x" in text
    assert "      actual   fatal error: traceback in runtime.(*unwinder).resolveInternal (runtime stack); exit " \
        "status 2\n" in text
    assert "      main.spin never returned: the injections up to this boundary, then on to the exit\n" in text
    assert "      runtime  fatal error: traceback\n               traceback: unexpected SPWRITE function " \
        "runtime.mcall\n" in text
    assert "      frames   runtime stack: runtime.throw <- runtime.(*unwinder).resolveInternal <- " in text
    assert "               goroutine 1 [running]: runtime.systemstack_switch <- " in text
    assert text.endswith("      ended    exit status 2\n")
    # realsweep's to-exit runs ask crashtext too
    code, text = run("sweep", KINDS, "--func", "spin", "--reg", "RAX=10", "--stub", stub, "--max-points", "3",
                     "--to-exit", "1", "--json")
    [v] = [v for v in json.loads(text)["violations"] if "facts" in v and v["detail"].startswith("one injection")]
    assert (v["boundary"], v["facts"]["crash"]["kind"]) == (0, "panic")
    # a to-exit run: one injection, then on to the exit
    from emu.drive import realsweep as R
    sw = R.RealSpec(KINDS, "spin", 1, (("RAX", 10),), stub, ("prog",)).build()
    sw.reference(10**7)
    pt, end = sw.single(0)
    v = crashtext.crash_violation(sw, end, 0, pt.pc, "one injection at this boundary, then on to the exit")
    assert v.facts["crash"]["kind"] == "panic" and v.facts["crash"]["message"] == \
        "panic: runtime error: invalid memory address or nil pointer dereference"
    assert v.facts["crash"]["context"][0].startswith("[signal SIGSEGV: segmentation violation code=0x1 addr=0x10")
    assert v.facts["crash"]["frames"] == ["internal/runtime/exithook.Run"]


def test_a_gc_crash_at_a_point_is_told_in_the_runtimes_words():
    """tests/data/go/zombie stores a pointer it kept as a number back into the heap: after a cycle at an
    injection in spin freed the list, the next cycle marks a freed object and the sweeper throws. The
    violation carries the runtime's fatal error, its explanation line and the exit status, in text and JSON."""
    args = ("sweep", "tests/data/go/zombie", "--func", "zombie", "--gc=scan", "--max-points", "100", "--to-exit", "0")
    code, text = run(*args)
    assert code == 1
    assert "actual   fatal error: found pointer to free object in runtime.(*mspan).reportZombies" in text
    assert "      runtime  fatal error: found pointer to free object\n               runtime: marked free object" in text
    assert "      ended    exit status 2\n" in text
    code, text = run(*args, "--json")
    [v] = [v for v in json.loads(text)["violations"] if "facts" in v]
    crash = v["facts"]["crash"]
    assert (crash["kind"], crash["message"], crash["exit_code"]) == ("fatal error", "fatal error: found pointer to "
                                                                      "free object", 2)
    assert crash["context"][0].startswith("runtime: marked free object in span")


def test_first_said_is_what_the_program_said_about_its_ending_not_the_testing_framing():
    """One rule for the line a finding quotes (schedule findings, a failed uninterrupted run, a reference that
    ended before F returned): stderr before stdout, "=== " framing skipped, a failed test's header with its
    first reason."""
    said = crashtext.first_said
    assert said(Ending(2, b"ok line\n", b"\npanic: boom\n\ngoroutine 1 [running]:\n", "exit")) == "panic: boom"
    test_out = b"=== RUN   TestUse\n--- FAIL: TestUse (0.00s)\n    use_test.go:12: got 3, want 4\nFAIL\n"
    assert said(Ending(1, test_out, b"", "exit")) == "--- FAIL: TestUse: use_test.go:12: got 3, want 4"
    assert said(Ending(1, b"=== RUN   T\n--- FAIL: T (0.01s)\n--- FAIL: U (0.00s)\n", b"", "exit")) == "--- FAIL: T"
    assert said(Ending(0, b"  \n=== RUN   T\n", b"", "exit")) == ""
