"""Error types raised at the boundaries of preemu.

Every third-party error (Keystone, Capstone, Unicorn, TOML) is translated into one of these in
exactly one place; the CLI prints them as one line and exits 2. "Not a safe point" is never an
error: it is a verdict.
"""


class EmuError(Exception):
    """Base class: a problem with the user's input or with the emulated program."""

    def __reduce__(self):
        # Picklable whatever the subclass's constructor takes: errors cross process boundaries
        # when shards run in worker processes (emu.drive.shards).
        return (_rebuild, (type(self), str(self), self.__dict__))


def _rebuild(cls, text: str, state: dict) -> EmuError:
    e = Exception.__new__(cls)
    Exception.__init__(e, text)
    e.__dict__.update(state)
    return e


class AsmError(EmuError):
    """An assembly source problem, located at file:line."""

    def __init__(self, file: str, line: int, message: str):
        self.file, self.line, self.message = file, line, message
        super().__init__(f"{file}:{line}: {message}" if line else f"{file}: {message}")


class ScenarioError(EmuError):
    """A scenario file problem, naming the offending key."""

    def __init__(self, path: str, key: str, message: str):
        self.path, self.key, self.message = path, key, message
        where = f"{path}: {key}" if key else path
        super().__init__(f"{where}: {message}")


class GuestFault(EmuError):
    """The emulated CPU faulted (outside a stub under test): names the PC and its disassembly."""

    def __init__(self, pc: int, where: str, detail: str):
        self.pc, self.where, self.detail = pc, where, detail
        super().__init__(f"guest fault at {pc:#x} ({where}): {detail}")


class BudgetExceeded(EmuError):
    """A run did not finish within its instruction budget (a runaway loop)."""

    def __init__(self, what: str, budget: int, pc: int, where: str, hint: str = ""):
        self.budget, self.pc = budget, pc
        super().__init__(f"{what} did not finish within {budget} instructions (stopped at {pc:#x} {where}); "
                         + (hint or "raise the budget with --budget if the loop is meant to run longer"))



MAX_TEXT_FILE = 64 << 20          # an assembly or scenario file larger than this is not one
#: a pipe or FIFO given as an input file that brings nothing for this long is not going to: a bounded error,
#: not a hang (a FIFO nobody writes to blocks open(2) and read(2) forever)
PIPE_WAIT_S = 10.0


def read_utf8(path) -> tuple[str | None, int, str]:
    """Read `path` as UTF-8 text: (text, 0, "") or (None, line or 0, one-line reason with the byte offset)."""
    import os
    import stat
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            return None, 0, "cannot read: it is a directory"
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):   # /dev/zero: read_bytes would never end
            return None, 0, "cannot read: it is a device, not a file"
        if stat.S_ISFIFO(st.st_mode):           # a FIFO, or `/dev/stdin` on a pipe: read to its end, up to the cap
            data = _read_pipe(path, MAX_TEXT_FILE + 1)
            if data is None:
                return None, 0, (f"cannot read: it is a pipe (FIFO) and nothing came through it for "
                                 f"{PIPE_WAIT_S:g} s; give the file itself")
        else:
            with open(path, "rb") as f:
                data = f.read(MAX_TEXT_FILE + 1)
        if len(data) > MAX_TEXT_FILE:
            return None, 0, f"cannot read: more than {MAX_TEXT_FILE:,} bytes, too large for a source file"
    except IsADirectoryError:
        return None, 0, "cannot read: it is a directory"
    except OSError as e:
        return None, 0, f"cannot read: {e.strerror}"
    try:
        return data.decode("utf-8"), 0, ""
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        return None, line, f"not UTF-8 text: byte {data[e.start]:#04x} at byte offset {e.start}"


def _read_pipe(path, limit: int) -> bytes | None:
    """Up to `limit` bytes of the pipe or FIFO at `path`, read to its end; None when no byte (and no end) came
    for PIPE_WAIT_S. Opened O_NONBLOCK: a FIFO's open(2) for reading waits for a writer (fs/pipe.c fifo_open),
    and poll(2) reports neither data nor hang-up until one has come (pipe_poll)."""
    import os
    import select
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        waiter = select.poll()
        waiter.register(fd, select.POLLIN)
        chunks, n = [], 0
        while n < limit:
            if not waiter.poll(PIPE_WAIT_S * 1000):
                return None
            try:
                chunk = os.read(fd, min(1 << 16, limit - n))
            except BlockingIOError:
                continue
            if not chunk:
                break
            chunks.append(chunk)
            n += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
