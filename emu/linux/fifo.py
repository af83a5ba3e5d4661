"""Named pipes (FIFOs) in the in-memory /tmp: mknod(S_IFIFO) there makes one (tmpfs.Node.fifo), and open(2)
joins it as fs/pipe.c fifo_open does.

- O_RDONLY: a reader; without O_NONBLOCK it waits until a writer has opened (wait_for_partner on w_counter);
- O_WRONLY: a writer; with no reader, O_NONBLOCK answers ENXIO, else it waits until a reader has opened;
- O_RDWR: both at once, never waits (Linux allows it: POSIX leaves it undefined).
Once open, the ends are fds.py's pipe ends (reads, writes, EOF once every writer closed, EPIPE with no
reader, epoll), sharing the node's PipeState with every other opener. Left out: a wait for a partner is not
interrupted by a signal (Linux: -ERESTARTSYS; the Go runtime signals running threads, not blocked ones), and
FIFOs outside /tmp (mknod there is EPERM: preemu makes no FIFO on the host).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import fds as F
from .sysabi import ENXIO
from .threads import Wait


@dataclass(eq=False)
class FifoState(F.PipeState):
    """A FIFO's pipe: no ends until someone opens it; how many readers and writers ever opened (fifo_open's
    r_counter, w_counter: a waiting opener goes on once its partner's counter moved)."""
    readers: int = 0
    writers: int = 0
    r_counter: int = 0
    w_counter: int = 0


@dataclass(eq=False)
class FifoEnd(F.Pipe):
    """An open FIFO: a pipe end, or both ends at once (O_RDWR)."""
    both: bool = False

    def on_close(self) -> None:
        if self.both:
            self.state.readers -= 1
            self.state.writers -= 1
            self.state.in_gen += 1
            self.state.out_gen += 1
        else:
            super().on_close()

    def readiness(self) -> int:
        if self.both:
            st = self.state
            return (F.EPOLLIN if st.buf else 0) | F.EPOLLOUT
        return super().readiness()


def open_fifo(p, t, st: FifoState, flags: int) -> int:
    """fifo_open: the new descriptor, -ENXIO, or BLOCK until the partner opens (the descriptor then)."""
    from .sysabi import BLOCK
    acc = flags & 3
    if acc == F.O_WRONLY and not st.readers and flags & F.O_NONBLOCK:
        return -ENXIO
    if acc == F.O_RDONLY:
        st.readers += 1
        st.r_counter += 1
        end, wait_for = FifoEnd(st, False, flags), ("w", st.w_counter) if not st.writers else None
    elif acc == F.O_WRONLY:
        st.writers += 1
        st.w_counter += 1
        end, wait_for = FifoEnd(st, True, flags), ("r", st.r_counter) if not st.readers else None
    else:
        st.readers += 1
        st.writers += 1
        st.r_counter += 1
        st.w_counter += 1
        end, wait_for = FifoEnd(st, False, flags, both=True), None
    st.in_gen += 1
    st.out_gen += 1
    fd = p.fds.install(end, cloexec=bool(flags & F.O_CLOEXEC))
    p.wake_pipe_readers()                     # an opener waiting for this partner goes on
    p.wake_pollers()
    if wait_for is None or flags & F.O_NONBLOCK:
        return fd
    side, seen = wait_for

    def partner_came() -> int | None:
        return fd if (st.w_counter if side == "w" else st.r_counter) != seen else None
    p.block(t, Wait("fifo", None, 0, retry=partner_came))
    return BLOCK
