"""The stub's part of a model-world story: asyncPreempt single-stepped, from its entry to its RET.

A mixin of story._Narrator: the stub's instructions grouped into steps (PUSHQ BP, PUSHFQ, ADJSP, the
saves, with the asyncPreempt frame as a table), the CALL to asyncPreempt2 (G1 off CPU: rescheduled,
registers clobbered, and preemu's GC scan when a cycle ran meanwhile), a fault, and at the RET every
register compared with the interrupted state, then the resume. Mirrors the generated asyncPreempt
(runtime/mkpreempt.go), runtime/preempt.go:317 asyncPreempt2 and runtime/mgcmark.go:904 scanstack.
Left out: the request, the signal and the run to goexit (story.py).
"""
from __future__ import annotations

from ..check import verify
from ..check.verify import Check
from ..core import regs
from ..model.faults import Fault
from .fmt import REG_ORDER, describe_pc, fmt_reg
from .notes import STUB_SHORT, STUB_TEXT, stub_phase


class _StubSteps:
    """The stub run and told step by step; uses the narrator's world (w, m, prog), its step list and add()."""

    def _stub(self, before, s: int, pc: int) -> bool:
        w, m, prog = self.w, self.m, self.prog
        stub = m.stub
        sf = stub.get_func("asyncPreempt")
        ret_after_call = None
        group: list[int] = []
        key = None
        m.stub_ret_armed = False
        for _ in range(10_000):
            cur = m.pc
            i = prog.insn_at(cur)
            if i is None or not (sf.start <= cur < sf.end):
                break
            k = stub_phase(i)
            if group and k != key:
                self._stub_step(key, group, s)
                group = []
            key = k
            if k == "ret":
                return self._ret(before, s, pc, cur)
            if k == "call":
                m0 = w.cur
                ret_after_call = cur + i.size
                gc0 = w.gc_cycles
                try:
                    m.run(cur, 1)                      # CALL asyncPreempt2
                    executed = [cur]
                    while m.pc != ret_after_call:
                        executed.append(m.pc)
                        m.run(m.pc, 1)
                except Fault as e:
                    return self._fault(e, s, pc)
                self._async_preempt2(m0, executed, before, gc0)
                continue
            group.append(cur)
            try:
                m.run(cur, 1)
            except Fault as e:
                if group[:-1]:
                    self._stub_step(key, group[:-1], s)
                return self._fault(e, s, pc)
        self.add("fault", "The stub never reached its RET", [f"stopped at {m.pc:#x}"],
                 checks=[Check("stub returns", False, f"stopped at {describe_pc(prog, m.pc)}")])
        return False

    def _fault(self, e: Fault, s: int, pc: int) -> bool:
        where = describe_pc(self.prog, e.pc)
        self.add("fault", "The stub faulted", [f"{e.error} at {where}."],
                 checks=[Check("stub runs without faulting", False, f"{e.error} at {where}")])
        return False

    def _stub_step(self, key: str, pcs: list[int], s: int) -> None:
        prog, lay, w = self.prog, self.w.layout, self.w
        lines = [f"  {describe_pc(prog, p)}" for p in pcs[:3]]
        if len(pcs) > 3:
            lines.append(f"  ... {len(pcs) - 3} more, to {describe_pc(prog, pcs[-1])}")
        title, say = STUB_TEXT[key]
        text = [say(lay, s, self.m.reg("RSP"))] + lines
        table = None
        if key == "save":
            base = lay.save_area_base(s)
            rows = [["S-8", f"{s - 8:#x}", "resume PC (pushCall)", f"{self.m.read_u64(s - 8):#x}"],
                    ["S-16", f"{s - 16:#x}", "RBP", f"{self.m.read_u64(s - 16):#x}"],
                    ["S-24", f"{s - 24:#x}", "RFLAGS", f"{self.m.read_u64(s - 24):#x}"]]
            for sl in lay.stack_slots:
                a = base + sl.offset
                val = int.from_bytes(self.m.read(a, sl.reg.size), "little")
                rows.append([f"S-{s - a}", f"{a:#x}", f"{sl.reg.go_name}  {sl.offset}(SP)", fmt_reg(sl.reg.name, val)])
            if lay.xreg_slots:
                scratch = w.pp + w.structs.p["xRegs.scratch"].offset
                for sl in lay.xreg_slots:
                    a = scratch + sl.offset
                    val = int.from_bytes(self.m.read(a, sl.reg.size), "little")
                    rows.append([f"p.xRegs+{sl.offset}", f"{a:#x}", f"{sl.reg.go_name} (P{w.cur} scratch)",
                                 fmt_reg(sl.reg.name, val)])
            table = {"title": f"the asyncPreempt frame ({lay.name} layout), S = {s:#x}",
                     "columns": ["slot", "address", "holds", "value"], "rows": rows}
        self.add("stub", title, text, executed=pcs, table=table, short=STUB_SHORT[key])

    def _async_preempt2(self, m0: int, executed: list[int], before, gc0: int) -> None:
        w = self.w
        m1 = w.cur
        now = self.regs_now()
        clob = [n for n in REG_ORDER if n not in ("RIP", "RSP") and self.steps[-1].regs[n] != now[n]]
        text = ["CALL asyncPreempt2 (runtime/preempt.go:317) -> mcall(gopreempt_m): G1 goes to the global run "
                "queue and M" + str(m0) + " calls schedule().",
                "No other goroutine is runnable in this world, so schedule() picks G1 again"
                + (f", this time on M{m1}/P{m1} (a preempted G may resume on any M and P)." if m1 != m0 else "."),
                f"Running other code clobbered {len(clob)} registers (every GPR but RBP, every flag, every XMM): "
                "only the stub's saved copies can bring them back."]
        if self.gc_during_preemption:
            text.append("Meanwhile a GC mark phase starts: the write barrier is now on (writeBarrier flag = 1).")
        if w.layout.xreg_slots:
            text.append("go1.27: xRegSave copied P's scratch into G1's xRegs block; on the new P xRegRestore "
                        "puts that block in p.xRegs.cache, where the stub reloads X0-X15 from.")
        self.add("asyncPreempt2", "asyncPreempt2: G1 is off CPU", text, executed=executed)
        if w.gc_enabled and w.gc_cycles > gc0:
            self._gc()

    def _gc(self) -> None:
        w = self.w
        frames, res, freed = w.last_gc
        how = {"asyncPreempt2": "precise (no pointers)", "asyncPreempt": "conservative (save area)",
               "interrupted": "conservative (whole frame)", "caller": "precise (stack map at the call)"}
        rows = [[fr.func, fr.kind, f"{fr.sp:#x}", str(fr.size), how[fr.kind]] for fr in frames]
        roots = [[where, f"{slot:#x}", f"{base:#x}"] for where, slot, base in res.roots]
        text = ["While G1 sits in asyncPreempt2 a GC cycle runs (runtime/mgcmark.go:904 scanstack): the unwinder "
                "walks the frames by return addresses, innermost first."]
        text += [f"  root: {where} [{slot}] -> object {base}" for where, slot, base in roots] or [
            "  no word on the stack or in globals points into the heap"]
        objs = w.heap.objs
        text.append(f"marked {len(res.marked)} object(s): {', '.join(f'{b:#x}' for b in sorted(res.marked)) or '-'}"
                    + (f" ({len(res.conservative_only)} only conservatively)" if res.conservative_only else ""))
        text.append(f"freed {len(freed)} object(s): {', '.join(f'{o.base:#x}' for o in freed) or '-'} "
                    f"(poisoned with 0xde); heap objects so far: {len(objs)}")
        marks = {(self.top - slot) // 8: f"GC root -> {base:#x}" for where, slot, base in res.roots
                 if 0 <= self.top - slot < 8 * self.nwords and (self.top - slot) % 8 == 0}
        self.add("gc", "GC: scan the preempted stack, mark, sweep", text, marks=marks,
                 table={"title": "frames the stack scan visits", "columns": ["function", "frame", "SP", "size",
                                                                           "scanned"], "rows": rows})

    def _ret(self, before, s: int, pc: int, ret_pc: int) -> bool:
        w, m, prog = self.w, self.m, self.prog
        after = m.dump_state()
        make = verify.violation_maker(prog, self.at, pc)
        found = verify.compare_registers(before, after, before.raw, after.raw, make)
        bad = {v.what for v in found}
        groups = [("14 GPRs", [r.name for r in regs.GP_REGS]), ("RBP", ["RBP"]), ("RFLAGS", ["RFLAGS"]),
                  ("XMM0-XMM15", [r.name for r in regs.XMM_REGS])]
        checks = []
        for label, names in groups:
            wrong = [n for n in names if n in bad]
            checks.append(Check(f"{label} bit-exact", not wrong,
                                "equal to the interrupted values" if not wrong else
                                "; ".join(v.describe().split(" at boundary")[0] for v in found if v.what in wrong)))
        sp = after.get("RSP")
        ret_to = m.read_u64(sp) if w.stack_lo <= sp < w.stack_hi else None
        checks.append(Check("RSP = S-8 and [S-8] = resume PC", sp == s - 8 and ret_to == pc,
                            f"RSP {sp:#x}, [RSP] = {ret_to:#x}" if ret_to is not None else f"RSP {sp:#x}"))
        rows = [[n, fmt_reg(n, before.values[n]), fmt_reg(n, after.values[n]), "same" if n not in bad else "DIFFERS"]
                for n in REG_ORDER if n not in ("RIP", "RSP")]
        self.add("compare", "At the stub's RET: every register compared", [
            "The oracle dumps every register at the RET and compares it with the interrupted state.",
            f"{sum(c.ok for c in checks)} of {len(checks)} checks hold."],
            table={"title": "interrupted vs at the RET", "columns": ["register", "interrupted", "at RET", ""],
                   "rows": rows}, checks=checks)
        m.run(ret_pc, 1)
        now = m.read(s, self.w.stack_hi - s)
        same = now == self.stack_above
        self.add("resume", "RET: G1 resumes at the interrupted PC", [
            f"RET pops the resume PC: RIP = {m.pc:#x} ({describe_pc(prog, m.pc)}), RSP = {m.reg('RSP'):#x}.",
            "G1 continues as if nothing had happened."],
            executed=[ret_pc],
            checks=[Check("resumes at the interrupted PC", m.pc == pc and m.reg("RSP") == s,
                          f"RIP {m.pc:#x}, RSP {m.reg('RSP'):#x}"),
                    Check("stack at and above S unchanged", same, "untouched" if same else "changed")])
        return True
