"""What a syscall handler asks of the emulated process: guest memory, the virtual clock, random bytes,
output, and where the program is (for an error message).

SyscallServices is a mixin of process.Process (it uses the process's engine, counter, clock and
options); the sys_*.py handlers call these as p.read, p.write, p.now, ... Mirrors no one Linux source:
copy_from_user/copy_to_user and strncpy_from_user are the memory helpers' models, CLOCK_MONOTONIC the
clock's. Left out: EFAULT and partial copies (a bad guest pointer raises the engine's UcError, which the
syscall hook reports as an error of the run).
"""
from __future__ import annotations

from unicorn import UcError
from unicorn import x86_const as X

from ..core.errors import EmuError
from .regbatch import mem_read, mem_write, read_reg, read_u64


class SyscallServices:
    """The helpers the syscalls use: read and write guest memory, tell the virtual time, draw random
    bytes, record a path or a stream's output, and describe the current PC for an error."""

    def read(self, addr: int, n: int) -> bytes:
        return mem_read(self.uc, addr, n)

    def write(self, addr: int, data: bytes) -> None:
        mem_write(self.uc, addr, bytes(data))

    def read_u64(self, addr: int) -> int:
        return read_u64(self.uc, addr)

    def read_cstr(self, addr: int, limit: int = 4096) -> str:
        out = bytearray()
        while len(out) < limit:
            chunk = self.read(addr + len(out), 64)
            z = chunk.find(b"\0")
            if z >= 0:
                out += chunk[:z]
                break
            out += chunk
        return out.decode(errors="replace")

    def fs_base(self) -> int:
        return read_reg(self.uc, X.UC_X86_REG_FS_BASE)

    def now(self) -> int:
        """Virtual CLOCK_MONOTONIC in ns (exact, also in the middle of a slice)."""
        if self.in_slice:
            return self.clock + self.counter.executed * self.opts.ns_per_insn
        return self.clock

    def random_bytes(self, n: int) -> bytes:
        return bytes(self.rng.getrandbits(8) for _ in range(n))

    def note_path(self, path: str) -> None:
        self.paths.append(path)

    def output(self, stream, data: bytes) -> None:
        """A write to stdout or stderr: streamed to the caller when it passes output through (only the last
        OUTPUT_TAIL bytes kept), else kept up to OUTPUT_KEEP and the run's memory limit (charged as "output",
        memory.Cgroup); what is not kept is counted. The program's write succeeds either way, as a write to a
        terminal or a file does."""
        from .fds import OUTPUT_KEEP, OUTPUT_TAIL
        before = len(stream.data)
        if self.opts.passthrough:
            self.opts.passthrough(stream.name, data)
            stream.data += data[-OUTPUT_TAIL:]
            cut = len(stream.data) - OUTPUT_TAIL
            if cut > 0:
                del stream.data[:cut]
            stream.dropped += before + len(data) - len(stream.data)
        else:
            room = OUTPUT_KEEP - before
            cg = self.cgroup.room()
            if cg is not None:
                room = min(room, cg)
            kept = data[:max(0, room)]
            stream.data += kept
            stream.dropped += len(data) - len(kept)
        self.cgroup.set_usage("output", len(self.fds.stdout.data) + len(self.fds.stderr.data))

    def unsupported(self, name: str, detail: str):
        raise EmuError(f"unsupported {name} at {self._where()}: {detail}")

    def _where(self, pc: int | None = None) -> str:
        if pc is None:
            pc = read_reg(self.uc, X.UC_X86_REG_RIP)
        code = self.read_or_empty(pc, 16)
        if self.avx is not None:                 # an AVX site's INT3 shown as the instruction it stands for
            code = self.avx.original(pc, code)
        import capstone                          # an error's message: Capstone's text of the instruction
        md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
        insn = next(iter(md.disasm(code, pc)), None)
        text = f"{insn.mnemonic} {insn.op_str}".strip() if insn else "??"
        t = self.cur or self.threads[self.pid]
        return f"pc {pc:#x} {self.image.describe(pc)} ({text}) in thread {t.name}({t.tid})"

    def read_or_empty(self, addr: int, n: int) -> bytes:
        try:
            return self.read(addr, n)
        except UcError:
            return b""
