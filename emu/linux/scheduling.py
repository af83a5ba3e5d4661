"""The threads of an emulated process as its scheduler sees them: created, exited, blocked, woken, held.

ThreadScheduling is a mixin of process.Process (it uses the process's engine, thread table, run queue
and clock). It mirrors clone's new thread (kernel/fork.c copy_thread: the child returns 0 from the
SYSCALL, on its own stack and TLS), exit/exit_group, and the wakeups that finish a blocking call:
futex_wake (kernel/futex), a pipe or socket read that can go on (fs/pipe.c pipe_read, net/), epoll_wait
(fs/eventpoll.c) and a wait whose deadline has passed. Where a woken or new thread runs (an idle CPU, ahead
of the runner it preempts, or the run queue in the order threads became runnable: try_to_wake_up ->
select_task_rq, check_preempt_curr) is cpus.py's rule; a wakeup that gives it a CPU ends the waker's slice.
Under a schedule (process.schedule, schedule.py) the schedule's priorities decide both: a wakee preempts a
runner of lower priority, and FUTEX_WAKE releases the highest-priority waiters first.
Which thread runs when, and for how long, is process.py's run loop; what each wait is, threads.py's.
Left out: nice levels, futex requeueing and robust lists. Other processes are proctable.py's (a thread id
then comes from its id space, shared with them).
"""
from __future__ import annotations

import struct

from unicorn import UcError
from unicorn import x86_const as X

from . import sys_socket
from .fds import Epoll, read_now, write_more
from .regbatch import read_reg
from .threads import BLOCKED, EXITED, RUNNABLE, Thread, Wait

FIRST_TID = 1000
_U64 = (1 << 64) - 1


class ThreadScheduling:
    """Creating and ending threads, blocking and waking them (futex, pipe, socket, epoll, deadline), and
    holding a runnable thread off the CPU (the real-program sweep's --gc)."""

    # --- threads ---------------------------------------------------------------------------------
    def new_thread(self, parent: Thread, stack: int, tls: int | None) -> int:
        tid = FIRST_TID + len(self.threads) if self.kernel is None else self.kernel.alloc_id()   # one id space
        ctx = self.uc.context_save()
        ctx.reg_write(X.UC_X86_REG_RIP, read_reg(self.uc, X.UC_X86_REG_RIP) + 2)   # the hook's RIP+2 rule
        ctx.reg_write(X.UC_X86_REG_RAX, 0)
        ctx.reg_write(X.UC_X86_REG_RSP, stack)
        if tls is not None:
            ctx.reg_write(X.UC_X86_REG_FS_BASE, tls)
        t = Thread(tid, ctx, sigmask=parent.sigmask, name=self._m_name(read_reg(self.uc, X.UC_X86_REG_R13)),
                   fs=parent.fs)                # CLONE_FS: the parent's fs state, its own if it unshared one
        if self.avx is not None:
            t.kregs = self.avx.kregs()          # clone copies the opmask registers too
        self.threads[tid] = t
        t.vruntime = self._vruntime_now(parent)          # task_fork_fair: the child starts at its parent's
        self._place(t, self.now())                       # wake_up_new_task
        return tid

    def _m_name(self, mp: int) -> str:
        """Name a new thread after its M: runtime·clone passes mp in R13 (sys_linux_amd64.s), and
        newm's mstartfn (runtime/proc.go) tells sysmon and the template thread from plain Ms."""
        try:
            m = self.structs.m
            fn = self.read_u64(mp + m["mstartfn"].offset)
            mid = self.read_u64(mp + m["id"].offset)
            start = self.image.func_at(self.read_u64(fn)) if fn else None
        except UcError:
            return "thread"
        if start is not None and start[0] in ("runtime.sysmon", "runtime.templateThread"):
            return start[0].removeprefix("runtime.")
        return f"m{mid}"                       # a plain M (mstartfn nil or mspinning)

    def exit_thread(self, t: Thread, code: int) -> None:
        if t.state != EXITED and self.tasks > 1:
            from .memory import THREAD_COST
            self.cgroup.task_gone(THREAD_COST)    # the thread leaves the cgroup (the last one: Process.release)
            self.tasks -= 1
        t.state = EXITED
        if all(x.state == EXITED for x in self.threads.values()):
            self.exit_group(code & 0xFF)

    def exit_group(self, code: int) -> None:
        self.exit_code = code
        self.stop_reason = "exit"
        for t in self.threads.values():
            t.state = EXITED
        self._stop_slice = True

    def yield_slice(self) -> None:
        self._stop_slice = True

    def block(self, t: Thread, w: Wait) -> None:
        if w.nr < 0:
            w.nr = self.syscall_nr
        t.state, t.wait = BLOCKED, w
        if w.kind == "futex":
            self.futex_waiters[w.futex].append(t)

    # --- holding a runnable thread off the CPU (the real-program sweep's --gc) ---------------------------
    def hold(self, t: Thread) -> None:
        """Keep runnable thread t off the CPU until unhold: the other threads run (virtual time passes)."""
        self.held.add(t.tid)
        if t in self.runq:
            self.runq.remove(t)

    def unhold(self, t: Thread) -> None:
        self.held.discard(t.tid)
        if t.state == RUNNABLE and t not in self.runq:
            self.runq.appendleft(t)

    def runnable_besides_held(self) -> bool:
        """Some thread other than the held ones can run now or later (runnable, or waiting with a timeout)."""
        return bool(self.runq) or self._earliest_deadline() is not None

    # --- waking ----------------------------------------------------------------------------------
    def wake(self, t: Thread, result: int, at: int | None = None) -> None:
        """Finish t's wait with `result` (its syscall's return value): runnable from `at` (default: now)."""
        w = t.wait
        if w is not None and w.kind == "futex":
            self.futex_waiters[w.futex].remove(t)
        t.state, t.wait = RUNNABLE, None
        t.ctx.reg_write(X.UC_X86_REG_RAX, result & _U64)
        self._place(t, self.now() if at is None else at)

    def _vruntime_now(self, t: Thread) -> int:
        """t's vruntime, with the slice in progress counted when t is the thread running."""
        if self.in_slice and t is self.cur:
            return t.vruntime + self.counter.executed * self.opts.ns_per_insn
        return t.vruntime

    def _place(self, t: Thread, now: int) -> None:
        """Queue runnable t as cpus.place decides; the runner gives up its CPU when t gets one. Between
        slices the runner is the thread whose slice just ended, while it still holds its CPU."""
        curr = self.cur
        if self.schedule is not None:                    # a schedule: higher priority preempts (schedule.py)
            t.ready_ns = now
            self.runq.append(t)
            if self.in_slice and curr is not None and curr is not t and curr.state == RUNNABLE \
                    and self.schedule.preempts(t, curr):
                self._stop_slice = True
            return
        if curr is not None and (curr is t or curr.state != RUNNABLE or curr.tid in self.held
                                 or (not self.in_slice and curr in self.runq)):
            curr = None
        if self.cpus.place(self.runq, t, now, curr, self._vruntime_now(curr) if curr is not None else 0) \
                and self.in_slice:
            self._stop_slice = True

    def futex_wake(self, addr: int, n: int) -> int:
        woken = 0
        waiters = list(self.futex_waiters.get(addr, ()))
        if self.schedule is not None:
            waiters = self.schedule.wake_order(waiters)  # which waiters a wake releases (schedule.py)
        for t in waiters:
            if woken >= n:
                break
            self.wake(t, 0)
            woken += 1
        return woken

    def epoll_collect(self, ep: Epoll, events: int, maxevents: int) -> int:
        ready = ep.ready(self.fds, maxevents, consume=True)
        for i, (rev, data) in enumerate(ready):
            self.write(events + 12 * i, struct.pack("<IQ", rev, data))
        return len(ready)

    def wake_pipe_readers(self) -> None:
        """Finish the blocking reads of pipes that now have data or no writer (fs/pipe.c pipe_read), and go on
        with the blocking writes that now have room or no reader (pipe_write), until neither moves."""
        moved = True
        while moved:
            moved = False
            for t in self.threads.values():
                if t.state == BLOCKED and t.wait.kind == "pipe":
                    r = read_now(self, t.wait.pipe, t.wait.buf, t.wait.count)
                    if r is not None:
                        self.wake(t, r)
                        moved = moved or r > 0
                elif t.state == BLOCKED and t.wait.kind == "pipe-write":
                    before = t.wait.count
                    r = write_more(self, t)
                    if r is not None:
                        self.wake(t, r)
                    moved = moved or t.wait is None or t.wait.count != before
                elif t.state == BLOCKED and t.wait.kind == "splice":   # splice/sendfile going on (sys_splice.py)
                    before = t.wait.count
                    r = t.wait.retry(t)
                    if r is not None:
                        self.wake(t, r)
                    moved = moved or t.wait is None or t.wait.count != before
                elif t.state == BLOCKED and t.wait.kind == "fifo":   # an open waiting for its partner (fifo.py)
                    r = t.wait.retry()
                    if r is not None:
                        self.wake(t, r)

    def wake_socket_waiters(self) -> None:
        """Finish the blocking accepts and datagram reads that can go on now (sys_socket.py)."""
        for t in self.threads.values():
            if t.state != BLOCKED:
                continue
            w = t.wait
            if w.kind == "accept":
                s = self.fds.get(w.fd)
                if isinstance(s, sys_socket.Socket) and s.backlog:
                    self.wake(t, sys_socket.finish_accept(self, s, w.addr, w.addrlen, w.flags))
            elif w.kind == "dgram" and w.pipe.error:
                e, w.pipe.error = w.pipe.error, 0
                self.wake(t, -e)
            elif w.kind == "dgram" and w.pipe.dgrams:
                self.wake(t, sys_socket.finish_recv(self, w.pipe, w.buf, w.count, w.addr, w.addrlen, w.flags))
        sent = False
        for t in self.threads.values():          # after the reads above: the senders they made room for (dgram.py)
            if t.state == BLOCKED and t.wait.kind == "dgram-send" and (r := t.wait.retry()) is not None:
                self.wake(t, r)
                sent = True
        if sent:                                 # what they queued, for the readers (each round wakes a sender)
            self.wake_socket_waiters()
            self.wake_pollers()

    def wake_pollers(self) -> None:
        for t in self.threads.values():
            if t.state == BLOCKED and t.wait.kind == "epoll":
                ep = self.fds.get(t.wait.epfd)
                if isinstance(ep, Epoll) and ep.ready(self.fds):
                    self.wake(t, self.epoll_collect(ep, t.wait.events, t.wait.maxevents))

    def _wake_due(self, upto: int) -> None:
        """Wake every thread whose deadline is at or before `upto`, each runnable from its deadline."""
        due = [(d, t.tid) for t in self.threads.values()
               if t.state == BLOCKED and (d := t.wait.deadline) is not None and d <= upto]
        if not due:                     # the common case, at every slice's end
            return
        due.sort()
        for d, tid in due:
            t = self.threads[tid]
            self.wake(t, t.wait.on_timeout, at=d)

    def _earliest_deadline(self) -> int | None:
        ds = [d for t in self.threads.values() if t.state == BLOCKED and (d := t.wait.deadline) is not None]
        return min(ds) if ds else None
