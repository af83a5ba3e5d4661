"""What the Scheduler does when its goroutine reaches a runtime sentinel (an INT3 in rtcode).

Mirrors runtime/stack.go newstack (a real growth runs copystack; a preemption request while the M
may not be preempted puts the guard back), preempt.go asyncPreempt2 and proc.go gopreempt_m /
goschedImpl (to the global run queue) or preemptPark when the GC asked, time.go's timeSleep (a timer
on the P) and goexit0. on_trap decides inside the INT3 hook; after acts once the M has parked
the G. A collaborator of sched.Scheduler (its `traps`), working on the scheduler's Ms, queues and trace.

Left out: channel and lock parking (a goroutine only sleeps, yields to preemption or exits),
gopark's reasons, the timer heap (a P's timers are a list).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..check.safepoint import can_preempt_m
from ..core import gostructs as gs
from ..core import memmap, regs
from ..core.errors import EmuError
from ..core.structref import read_field, write_field
from .gmp import read_sched_state, xreg_save
from .stack import copystack

if TYPE_CHECKING:
    from .machine import Machine
    from .schedrecords import G, M


class Traps:
    """The Scheduler's side of a G's trap: grow or preempt at morestack, yield, sleep, exit."""

    def __init__(self, s) -> None:
        self.s = s                               # the Scheduler whose Ps, Ms and Gs this works on

    def on_trap(self, machine: Machine, name: str) -> str | None:
        """Runs inside the INT3 hook for the G in self.s._running."""
        g = self.s._running
        if name == "morestack":
            guard = read_field(machine, g.addr, gs.G_FIELDS, "stackguard0")
            if guard != gs.STACK_PREEMPT:                    # a real growth: copystack and go on
                slot_base = memmap.STACK_BASE + g.slot * memmap.STACK_SLOT
                g.stack_lo, g.stack_hi = copystack(machine, g.ref, g.stack_lo, g.stack_hi, slot_base)
                return None
            m = self.s._running_m
            if can_preempt_m(read_sched_state(g.ref, m.ref, m.p.ref, self.s.rules)) is not None:
                # newstack (stack.go:1122-1129): not while the M holds locks, mallocs or has preemption
                # off: the guard goes back and the G runs on; gp.preempt stays set for its next prologue
                write_field(machine, g.addr, gs.G_FIELDS, "stackguard0", g.stack_lo + gs.STACK_GUARD)
                return None
        return "park"

    def after(self, m: M, g: G, name: str, ctx, t: float) -> None:
        mm, G_ = self.s.machine, gs.G_FIELDS
        g.ctx = ctx
        track = f"M{m.idx}"
        if self.s.observer is not None:
            self.s.observer.trapped(m, g, name, t)
        if name in ("asyncPreempt2", "morestack"):          # mcall(gopreempt_m): _Grunning -> _Grunnable
            if name == "asyncPreempt2":
                g.preempt_async += 1
                if self.s.layout.xreg_slots:                   # xRegSave: this P's scratch -> the G's block
                    xreg_save(m.p.ref, g.ref, g.xreg_block)
                    g.xregs_saved = True
            else:
                g.preempt_coop += 1
            self.s._ev("preempt", t, track, g=g.name, how="async" if name == "asyncPreempt2" else "cooperative")
            if read_field(mm, g.addr, G_, "preemptStop"):
                self.s.suspender.preempt_park(m, g, t)
                return
            write_field(mm, g.addr, G_, "atomicstatus", gs.G_RUNNABLE)
            g.status, g.runnable_since = "runnable", t
            self.s._drop(m, t, "preempted")
            self.s.global_q.append(g)                          # goschedImpl: globrunqput
        elif name == "nanosleep":
            ns = ctx.reg_read(regs.lookup("RAX").uc_id)
            write_field(mm, g.addr, G_, "atomicstatus", gs.G_WAITING)
            g.status, g.runnable_since = "waiting", None
            m.p.timers.append((t + ns, g))
            self.s._ev("sleep", t, track, g=g.name, ns=ns)
            self.s._drop(m, t, "sleep")
        elif name == "goexit":
            write_field(mm, g.addr, G_, "atomicstatus", gs.G_DEAD)
            g.status = "dead"
            self.s._ev("exit", t, track, g=g.name)
            self.s._drop(m, t, "exit")
        else:
            raise EmuError(f"goroutine {g.name}: unexpected trap {name}")
