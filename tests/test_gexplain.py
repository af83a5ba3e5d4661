"""`preemu explain` of Go input tells one preemption from the real program (emu/teach/real.py): the
rt_sigframe on the signal stack, the runtime's decision in doSigPreempt, pushCall's edit of the ucontext,
asyncPreempt's frame and the resume, in text, JSON and a page stepped through in Chromium."""
import io
import json

import browser            # tests/browser.py: Debian's chromium through Playwright
import pytest

from emu import cli

KINDS = "tests/data/go/kinds"


def explain(*args):
    out = io.StringIO()
    code = cli.main(["explain", *args, "--json"], out)
    return code, json.loads(out.getvalue()) if code != 2 else None


@pytest.fixture(scope="module")
def spin():
    return explain(KINDS, "--func", "spin", "--reg", "RAX=3", "--at", "5")


def step(d, short):
    return next(s for s in d["steps"] if s["short"] == short)


def table(s):
    return {r[0]: r[1:] for r in s["table"]["rows"]}


def test_an_injection_is_told_from_the_real_signal_frame_to_the_resume(spin):
    code, d = spin
    assert code == 0 and d["ok"] and d["verdict"] == "injected" and d["layout"] == "real program"
    assert [s["short"] for s in d["steps"]] == ["the goroutine", "the request", "delivery", "doSigPreempt", "pushCall",
                                                "rt_sigreturn", "asyncPreempt", "asyncPreempt2", "RET", "the end"]
    pc = int(d["pc"], 16)
    frame = table(step(d, "delivery"))
    assert int(frame["uc_mcontext.rip (interrupted PC)"][1], 16) == pc            # what the kernel saved
    assert frame["siginfo (si_signo, si_code)"][1] == "23 (SIGURG), -6 (SI_TKILL)"
    assert "runtime.sigreturn__sigaction" in frame["pretcode (the handler's return address)"][1]
    decided = step(d, "doSigPreempt")
    assert [c["ok"] for c in decided["checks"]] == [True] and decided["table"]["rows"][-1][-1] == "pass"
    edit = table(step(d, "pushCall"))
    assert int(edit["uc_mcontext.rip"][0], 16) == pc and "runtime.asyncPreempt" in edit["uc_mcontext.rip"][1]
    assert int(edit["uc_mcontext.rsp"][1], 16) == int(edit["uc_mcontext.rsp"][0], 16) - 8
    slots = table(step(d, "asyncPreempt"))
    assert set(slots) >= {"RAX", "RBX", "R15"} and int(slots["RAX"][1], 16) == 3      # the entry register, saved
    ret = step(d, "RET")
    assert all(r[-1] == "same" for r in ret["table"]["rows"]) and len(ret["table"]["rows"]) == 32
    assert d["sigstack_labels"] and step(d, "delivery")["sigstack"]


def test_at_a_source_line_is_the_first_boundary_there_named_so_the_user_can_step_on(spin):
    code, d = explain(KINDS, "--func", "spin", "--reg", "RAX=3", "--at", "main.go:113")
    assert code == 0 and d["ok"]
    k, first = d["at"], d["steps"][0]
    insn = next(i for i in d["code"]["main.spin"]["insns"] if i["pc"] == d["pc"])
    assert insn["line"] == 113 and insn["file"].endswith("kinds/main.go")
    assert f"The goroutine at boundary {k} (main.go:113, the first of " in first["title"]
    assert f"step with --at {k - 1} or --at {k + 1}." in first["text"][0]
    # the same PC named as FUNC+OFF: the same boundary, the first at that PC
    code, by_pc = explain(KINDS, "--func", "spin", "--reg", "RAX=3", "--at", f"main.spin+{insn['off']:#x}")
    assert code == 0 and by_pc["at"] == k
    assert f"(main.spin+{insn['off']:#x}, the first of " in by_pc["steps"][0]["title"]
    # and no earlier boundary is on that line: the one before runs elsewhere
    _, before = explain(KINDS, "--func", "spin", "--reg", "RAX=3", "--at", str(k - 1))
    assert next(i for i in before["code"]["main.spin"]["insns"] if i["pc"] == before["pc"])["line"] != 113


def test_the_stack_names_a_word_only_from_the_step_that_gives_it_its_role(spin):
    _, d = spin
    labels = [" | ".join(x for x in s["stack_labels"] if x) for s in d["steps"]]
    at = {s["short"]: i for i, s in enumerate(d["steps"])}
    assert "interrupted SP" in labels[0]          # the goroutine's step: nothing has happened below SP yet
    for i in range(at["pushCall"]):
        assert "pushCall" not in labels[i] and "asyncPreempt" not in labels[i], d["steps"][i]["short"]
    assert "return address (pushCall)" in labels[at["pushCall"]]
    assert "asyncPreempt frame" not in labels[at["rt_sigreturn"]] and \
        "asyncPreempt frame: saved RAX" in labels[at["asyncPreempt"]]
    assert labels[-1] == " | ".join(x for x in d["stack_labels"] if x)      # the story's list: every role taken


def test_the_text_tells_the_same_story():
    out = io.StringIO()
    assert cli.main(["explain", KINDS, "--func", "spin", "--reg", "RAX=3", "--at", "5"], out) == 0
    text = out.getvalue()
    assert text.startswith("preemu explain: tests/data/go/kinds  func main.spin  boundary 5 of ")
    for line in ("[3/10] tgkill and delivery: the rt_sigframe on thread", "uc_mcontext.rip (interrupted PC)",
                 "[4/10] sighandler -> doSigPreempt: the runtime decides", "preemu's oracle says 'safe'; the runtime "
                 "injected.", "[5/10] pushCall edits the saved context", "return address (pushCall)",
                 "32 registers compared with the interrupted state: all equal", "OK: 6 of 6 checks hold."):
        assert line in text, line


def test_a_refusal_leaves_the_context_alone():
    code, d = explain(KINDS, "--func", "wrapped", "--at", "1")
    assert code == 0 and d["ok"] and d["verdict"] == "refused" and d["reason"] == "unsafe-point"
    edit = table(step(d, "pushCall"))
    assert edit["uc_mcontext.rip"][0] == edit["uc_mcontext.rip"][1].split()[0]
    assert not any(s["short"] == "asyncPreempt" for s in d["steps"])


def test_with_gc_the_runtimes_own_cycle_is_told_and_its_use_after_free_fails():
    code, d = explain("tests/data/go/gcreal", "--func", "hidden", "--gc", "--at", "2950")
    assert code == 1 and d["gc"]
    scan = step(d, "the GC's scan")
    assert ["main.spin", "conservative"] in scan["table"]["rows"] and ["main.hidden", "precise"] in scan["table"]["rows"]
    bad = [c for c in d["steps"][-1]["checks"] if not c["ok"]]
    assert [c["name"] for c in bad] == ["nothing the cycle freed is used afterwards"]


@pytest.mark.parametrize("args, message", [
    (["--at", "spin + 6"], "for Go input give a boundary number"),
    (["--at", "main.go:106"], "main.go:106 is never run by main.spin's goroutine between main.spin's entry and its "
                              "return; lines near it that it runs: main.go:112 (first at boundary 0), main.go:113 "
                              "(first at boundary 5), main.go:115 (first at boundary "),
    (["--at", "main.go:117"], "main.go:117 has no code; lines near it that it runs: "),
    (["--at", "nosuch.go:3"], "no file of the program is named nosuch.go (main.spin is in main.go)"),
    (["--at", "main.digest"], "main.digest+0x0 (tests/data/go/kinds/main.go:104) is never run by main.spin's"),
    (["--at", "99999"], "boundaries 0 to"),
    (["--at", "1", "--layout", "go1.14"], "--layout: preemu's model world only"),
])
def test_bad_input_is_exit_2(args, message, capsys):
    code = cli.main(["explain", KINDS, "--func", "spin", "--reg", "RAX=3", *args], io.StringIO())
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_the_page_draws_both_stacks_and_steps_through_without_errors(tmp_path, spin):
    _, d = spin
    html = tmp_path / "real.html"
    assert cli.main(["explain", KINDS, "--func", "spin", "--reg", "RAX=3", "--at", "5", "--html", str(html)],
                    io.StringIO()) == 0
    assert "http://" not in html.read_text().replace("http://www.w3.org/2000/svg", "")
    with browser.page() as (pg, errors):
        pg.goto(html.as_uri())
        for i, st in enumerate(d["steps"]):
            if i:
                pg.keyboard.press("ArrowRight")
            v = pg.evaluate("""() => ({counter: document.getElementById('counter').textContent,
                title: document.getElementById('step-title').textContent,
                regs: Object.fromEntries([...document.querySelectorAll('#regs td[id^=reg-]')].map(
                    td => [td.id.slice(4), td.textContent])),
                sig: document.getElementById('sigcol').hidden ? null : document.getElementById('sigstack').textContent,
                stack: document.querySelector('#stack svg').textContent})""")
            assert v["counter"] == f"step {i + 1} / {len(d['steps'])}" and v["title"] == st["title"]
            assert v["regs"] == st["regs"]
            if i < next(k for k, s in enumerate(d["steps"]) if s["short"] == "pushCall"):
                assert "pushCall" not in v["stack"] and "asyncPreempt frame" not in v["stack"]     # not yet
            if st["short"] == "pushCall":
                assert "return address (pushCall)" in v["stack"]
            if st["short"] == "delivery":
                assert "mcontext.rip" in v["sig"] and "siginfo" in v["sig"]
        assert not errors, errors


def test_a_stub_without_popfq_ends_the_story_in_the_failed_comparison():
    code, d = explain(KINDS, "--func", "spin", "--reg", "RAX=3", "--at", "0", "--stub", "tests/data/stub_no_pushfq.s")
    assert code == 1 and not d["ok"]
    ret = step(d, "RET")
    assert [r[0] for r in ret["table"]["rows"] if r[-1] == "DIFFERS"] == ["RFLAGS"]
    assert [c["name"] for c in d["steps"][-1]["checks"] + ret["checks"] if not c["ok"]] == \
        ["every register and the flags come back"]
    assert "The stub loaded over runtime.asyncPreempt" in step(d, "asyncPreempt")["text"][0]
