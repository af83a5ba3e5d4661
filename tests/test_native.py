"""The compiled per-point path (emu/engine/_native.c, issue #49) against the Python code it mirrors: the module
is built and loaded, and each moved piece leaves the same bytes in guest memory, the same registers and the same
Python values as the Python path (PREEMU_NATIVE=0 selects it). Whole sweeps, both ways: test_native_sweeps.py."""
from __future__ import annotations

import random

import pytest
from unicorn import UC_ARCH_X86, UC_MODE_64, Uc, UcError
from unicorn import x86_const as X

from emu.engine import native
from emu.linux import sigframe

BASE, SIZE = 0x100000, 1 << 20
GPRS = [getattr(X, f"UC_X86_REG_{r}") for r in ("RAX", "RBX", "RCX", "RDX", "RSI", "RDI", "RBP", "R8", "R9", "R10",
                                              "R11", "R12", "R13", "R14", "R15", "RIP", "FS_BASE")]
ALL = [*GPRS, X.UC_X86_REG_RSP, X.UC_X86_REG_EFLAGS, X.UC_X86_REG_FPCW, X.UC_X86_REG_FPSW, X.UC_X86_REG_FPTAG,
       X.UC_X86_REG_MXCSR, *sigframe.XMM]


def test_the_module_is_built_and_loaded_from_this_tree():
    assert native.MODE != "0", "run this test without PREEMU_NATIVE=0"
    assert native.lib is not None, "emu.engine._native is not built: pip install -e . (or setup.py build_ext --inplace)"
    assert native.lib.__file__.startswith(str(__import__("pathlib").Path(native.__file__).parent))


def _machine(seed: int) -> Uc:
    rng = random.Random(seed)
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    uc.mem_map(BASE, SIZE)
    uc.mem_write(BASE, rng.randbytes(SIZE))
    for r in GPRS:
        uc.reg_write(r, rng.getrandbits(64))
    uc.reg_write(X.UC_X86_REG_RSP, BASE + SIZE // 2 + rng.randrange(0, 4096))
    uc.reg_write(X.UC_X86_REG_EFLAGS, 0x202 | rng.choice([0, 0x1, 0x400, 0x100, 0x40000, 0x8D5]))
    uc.reg_write(X.UC_X86_REG_FPCW, rng.choice([0x37F, 0x27F]))
    uc.reg_write(X.UC_X86_REG_MXCSR, rng.choice([0x1F80, 0x1FC0, 0x9FA0]))
    for r in sigframe.XMM:
        uc.reg_write(r, rng.getrandbits(128))
    return uc


def _state(uc) -> tuple:
    return tuple(uc.reg_read(r) for r in ALL), bytes(uc.mem_read(BASE, SIZE))


def _both(seed, fn, monkeypatch):
    """fn(uc) on two identical machines, compiled then Python: (results, states)."""
    out = []
    for lib in (native.lib, None):
        monkeypatch.setattr(sigframe, "_native", lib)
        uc = _machine(seed)
        out.append((fn(uc), _state(uc)))
    return out


CASES = [  # (siginfo, altstack, on_altstack)
    (sigframe.SigInfo(23, pid=42, uid=7), None, False),
    (sigframe.SigInfo(23, pid=(1 << 31) + 5, uid=(1 << 32) - 2), None, False),      # si_pid, si_uid unsigned
    (sigframe.SigInfo(11, sigframe.SEGV_MAPERR, addr=0xDEAD0, trapno=14, err=6), None, False),
    (sigframe.SigInfo(17, code=1, pid=9, status=3), (BASE + 0x10000, 0x8000), False),
    (sigframe.SigInfo(5, sigframe.SI_KERNEL, trapno=3), (BASE + 0x10000, 0x8000), True),
    (sigframe.SigInfo(11, sigframe.SEGV_ACCERR, addr=0, trapno=14, err=0x15), (BASE + 0x20000, 0x4000), False),
]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("case", range(len(CASES)))
def test_frame_setup_and_sigreturn_are_the_python_paths(seed, case, monkeypatch):
    info, alt, on_alt = CASES[case]

    def deliver_and_return(uc):
        d = sigframe.setup_rt_frame(uc, info, 0x402000 + seed, 0x403000, 0x5A5A << seed, alt, on_alt)
        entry = _state(uc)
        uc.mem_write(d.fpstate + 160, random.Random(seed).randbytes(256))     # the handler changed XMM in the frame
        uc.reg_write(X.UC_X86_REG_EFLAGS, 0x246 | 0x400)
        uc.reg_write(X.UC_X86_REG_RSP, d.frame + 8)                    # the handler's RET popped pretcode
        r = sigframe.restore_rt_frame(uc)
        return entry, (d.frame, d.ucontext, d.fpstate, d.regs, d.xmm, d.mxcsr, d.sig, d.fs_base, d.ext, d.vals), \
            (r.regs, r.sigmask, r.fpstate, r.kregs, r.vals)

    (got, got_state), (want, want_state) = _both(seed, deliver_and_return, monkeypatch)
    assert got[0] == want[0]            # memory and registers at the handler's entry
    assert got[1:] == want[1:]          # Delivered and Restored
    assert got_state == want_state      # after rt_sigreturn


def test_a_null_fpstate_resets_the_fpu_as_the_python_path_does(monkeypatch):
    def run(uc):
        d = sigframe.setup_rt_frame(uc, CASES[0][0], 0x402000, 0x403000, 0, None, False)
        uc.mem_write(d.frame + sigframe.FPSTATE_PTR, bytes(8))
        uc.reg_write(X.UC_X86_REG_RSP, d.frame + 8)
        r = sigframe.restore_rt_frame(uc)
        return r.vals, r.fpstate
    (got, got_state), (want, want_state) = _both(1, run, monkeypatch)
    assert got == want and got_state == want_state


def test_an_unmapped_frame_is_the_same_uc_error(monkeypatch):
    errs = []
    for lib in (native.lib, None):
        monkeypatch.setattr(sigframe, "_native", lib)
        uc = _machine(2)
        uc.reg_write(X.UC_X86_REG_RSP, BASE + 64)                  # the frame falls below the mapping
        with pytest.raises(UcError) as e:
            sigframe.setup_rt_frame(uc, CASES[0][0], 0x402000, 0x403000, 0, None, False)
        uc.reg_write(X.UC_X86_REG_RSP, BASE - 4096)
        with pytest.raises(UcError) as e2:
            sigframe.restore_rt_frame(uc)
        errs.append((e.value.errno, e2.value.errno, _state(uc)))
    assert errs[0] == errs[1]


def test_one_register_and_memory_calls_are_the_python_ones():
    from emu.linux import regbatch
    assert regbatch.read_reg is native.lib.read_reg          # bound in place of the Python functions
    uc = _machine(3)
    for r in [*GPRS, X.UC_X86_REG_EFLAGS, X.UC_X86_REG_FPCW, X.UC_X86_REG_MXCSR, X.UC_X86_REG_FS]:
        assert regbatch.read_reg(uc, r) == regbatch.PY["read_reg"](uc, r)
    for addr in (BASE, BASE + 4093, BASE + SIZE - 8):
        assert regbatch.read_u64(uc, addr) == regbatch.PY["read_u64"](uc, addr)
    for addr, n in ((BASE, 0), (BASE + 7, 100), (BASE + 10, 4096), (BASE + 1, 5000)):
        assert regbatch.mem_read(uc, addr, n) == regbatch.PY["mem_read"](uc, addr, n)
    regbatch.mem_write(uc, BASE + 3, b"native")
    regbatch.PY["mem_write"](uc, BASE + 9, b"python")
    assert bytes(uc.mem_read(BASE + 3, 12)) == b"nativepython"
    for name, args in (("read_u64", (BASE - 8,)), ("mem_read", (BASE + SIZE - 4, 8)), ("mem_write", (BASE - 1, b"x"))):
        errs = []
        for fn in (getattr(regbatch, name), regbatch.PY[name]):
            with pytest.raises(UcError) as e:
                fn(uc, *args)
            errs.append(e.value.errno)
        assert errs[0] == errs[1], name


def test_a_code_hook_through_the_c_trampoline_behaves_as_the_bindings():
    """Called with (uc, address, size, user_data) at its address only; its exception stops the run and is what
    emu_start raises; uc.hook_del removes it."""
    code = bytes.fromhex("4831c0" "48ffc0" "48ffc0" "48ffc0" "90")     # xor rax,rax; inc rax x3; nop
    seen = []

    class Boom(Exception):
        pass

    def on(uc, addr, size, data):
        seen.append((uc, addr, size, data, uc.reg_read(X.UC_X86_REG_RAX)))
        if data == "raise":
            raise Boom(addr)

    for how in ("native", "binding"):
        seen.clear()
        uc = Uc(UC_ARCH_X86, UC_MODE_64)
        uc.mem_map(BASE, 4096)
        uc.mem_write(BASE, code)
        add = (lambda *a: native.hook_code(uc, *a)) if how == "native" else \
            (lambda *a: uc.hook_add(__import__("unicorn").UC_HOOK_CODE, on if a[0] is on else a[0], *a[1:]))
        h = add(on, "x", BASE + 6, BASE + 6)
        uc.emu_start(BASE, BASE + len(code))
        assert seen == [(uc, BASE + 6, 3, "x", 1)], how
        uc.hook_del(h)
        seen.clear()
        uc.emu_start(BASE, BASE + len(code))
        assert seen == []
        add(on, "raise", BASE + 9, BASE + 9)
        with pytest.raises(Boom) as e:
            uc.emu_start(BASE, BASE + len(code))
        assert e.value.args == (BASE + 9,) and uc.reg_read(X.UC_X86_REG_RIP) == BASE + 9, how


def test_register_batches_read_and_write_as_the_python_ones():
    from emu.linux import regbatch
    ids = [X.UC_X86_REG_RAX, X.UC_X86_REG_FPCW, X.UC_X86_REG_EFLAGS, *sigframe.XMM[:3], X.UC_X86_REG_R15,
           X.UC_X86_REG_MXCSR]
    wide = sigframe.XMM[:3]
    b = regbatch.RegBatch(ids, wide=wide)
    assert type(b).__name__ == "_NativeRegBatch"
    py = regbatch.RegBatch(ids, wide=wide)
    py.__class__ = regbatch.RegBatch
    rng = random.Random(5)
    values = [rng.getrandbits(64), 0x27F, 0x246, rng.getrandbits(128), -1, (1 << 130) + 5, -7, 0x1FA0]
    states = []
    for batch in (b, py):
        uc = _machine(4)
        got = [batch(uc), batch.raw(uc)]
        batch.write(uc, values)
        got += [batch(uc), _state(uc)]
        batch.write_raw(uc, bytes(range(16)) * len(ids))
        got += [batch(uc), _state(uc)]
        states.append(got)
    assert states[0] == states[1]


@pytest.mark.parametrize("limit", [3, 7, 50])
def test_the_counters_questions_inside_a_hook_are_the_python_answers(limit):
    from emu.linux.icount import InsnCounter
    code = bytes.fromhex("4831c0" + "48ffc0" * 4 + "4883f80a" + "75ee" + "90" * 3)   # a loop of 4 incs that never ends
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    uc.mem_map(BASE, 4096)
    uc.mem_write(BASE, code)
    counter = InsnCounter(uc)
    assert isinstance(counter.stopping, __import__("functools").partial)
    seen = []

    def on(uc, addr, size, _):
        seen.append((counter.stopping(addr), InsnCounter.stopping(counter, addr), counter.at(addr),
                     InsnCounter.at(counter, addr)))
        if addr == BASE + 6 and not lowered:        # a hook ends the slice right after this instruction, as
            lowered.append(counter.at(addr))        # gclock's _begin does: the next hook's instruction is at the
            counter.lower_limit(lowered[0])         # limit exactly (stopping: True)
    lowered = [] if limit == 50 else [None]
    for k in range(len(code)):
        native.hook_code(uc, on, None, BASE + k, BASE + k)
    uc.reg_write(X.UC_X86_REG_RIP, BASE)
    counter.arm(limit)
    counter.run(BASE)
    assert seen and all(a == b and c == d for a, b, c, d in seen)
    assert len({s[2] for s in seen}) >= min(limit, 10) or lowered[0]     # the count moved on from hook to hook
    assert any(s[0] for s in seen) == (limit == 50)        # the limit reached exactly inside a block, once


def test_syscall_and_interrupt_hooks_and_emu_start_behave_as_the_bindings():
    """syscall; int3; nop: the SYSCALL hook gets (uc, data), the interrupt hook (uc, intno, data); emu_start
    raises the interrupt hook's exception after the run, with RIP where the binding leaves it."""
    code = bytes.fromhex("0f05" "cc" "90")
    results = []
    for lib in (native.lib, None):
        uc = Uc(UC_ARCH_X86, UC_MODE_64)
        uc.mem_map(BASE, 4096)
        uc.mem_write(BASE, code)
        seen = []

        def on_syscall(u, data):
            seen.append(("syscall", u is uc, data, u.reg_read(X.UC_X86_REG_RIP)))

        def on_intr(u, intno, data):
            seen.append(("intr", u is uc, intno, data))
            raise KeyError(intno)
        if lib is None:
            import unicorn
            uc.hook_add(unicorn.UC_HOOK_INSN, on_syscall, "s", 1, 0, X.UC_X86_INS_SYSCALL)
            uc.hook_add(unicorn.UC_HOOK_INTR, on_intr, "i")
            start = uc.emu_start
        else:
            lib.hook_add(uc, 1, on_syscall, "s", 1, 0)
            lib.hook_add(uc, 2, on_intr, "i", 1, 0)
            start = lambda b, u: lib.emu_start(uc, b, u, 0, 0)        # noqa: E731
        with pytest.raises(KeyError) as e:
            start(BASE, BASE + len(code))
        results.append((seen, e.value.args, uc.reg_read(X.UC_X86_REG_RIP)))
        with pytest.raises(UcError) as e2:
            start(BASE + 4096, BASE + 4100)                     # unmapped: the engine's own error
        results.append(e2.value.errno)
    assert results[:2] == results[2:]


def test_an_engine_with_hooks_is_collected_when_nothing_else_holds_it():
    """The hook's record is GC-tracked: Uc -> _callbacks -> record -> callback's owner -> Uc is a cycle the
    collector frees (as the binding's closures are); an untracked record kept every process's engine alive."""
    import gc
    import weakref

    class Owner:
        def __init__(self):
            self.uc = Uc(UC_ARCH_X86, UC_MODE_64)

        def on(self, uc, addr, size, data):
            pass
    o = Owner()
    native.hook_code(o.uc, o.on, None, 1, 0)
    native.lib.hook_add(o.uc, 1, lambda uc, d: None, o, 1, 0)
    w = weakref.ref(o.uc)
    del o
    gc.collect()
    assert w() is None


def test_struct_fields_are_read_as_the_python_reference_reads_them():
    """regbatch.read_fields (the oracle's g, m and p): the same values in the spec's order, in one span or field
    by field (a span over a page, a span whose read fails over a hole the fields skip); the same UcError when a
    field's own bytes are unmapped."""
    from emu.linux import regbatch
    assert regbatch.read_fields is native.lib.read_fields
    uc = _machine(5)
    uc.mem_map(BASE + SIZE + 4096, 4096)                        # a page beyond a one-page hole
    uc.mem_write(BASE + SIZE + 4096, random.Random(5).randbytes(4096))
    specs = [[(0, 8), (8, 8), (144, 4), (177, 1), (48, 8)],     # out of offset order
             [(4, 4), (13776, 1)],                              # a span over a page: field by field
             [(2, 2)], []]
    for spec in specs:
        for base in (BASE, BASE + 4091, BASE + SIZE - 14000):
            b = regbatch.field_spec(spec)
            assert regbatch.read_fields(uc, base, b) == regbatch.PY["read_fields"](uc, base, b), (spec, base)
    assert regbatch.read_fields(uc, BASE, regbatch.field_spec([(8, 8), (0, 8)])) == \
        (regbatch.read_u64(uc, BASE + 8), regbatch.read_u64(uc, BASE))
    hole = regbatch.field_spec([(0, 8), (8192, 4)])             # both fields mapped, the page between them not
    near = BASE + SIZE - 8
    assert regbatch.read_fields(uc, near, hole) == regbatch.PY["read_fields"](uc, near, hole) == \
        (regbatch.read_u64(uc, near), regbatch.read_u64(uc, near + 8192) & 0xFFFFFFFF)
    unmapped = regbatch.field_spec([(0, 8), (4096, 8)])         # the second field falls in the hole
    errs = []
    for fn in (regbatch.read_fields, regbatch.PY["read_fields"]):
        with pytest.raises(UcError) as e:
            fn(uc, near, unmapped)
        errs.append(e.value.errno)
    assert errs[0] == errs[1]
    for bad in ([(0, 3)], [(0, 8), (4, 4)], [(1 << 16, 8)]):    # a size read_fields has no code for, an overlap
        with pytest.raises(ValueError, match="read_fields reads fields of 1, 2, 4 or 8 bytes"):
            regbatch.field_spec(bad)
    with pytest.raises(ValueError, match="regbatch.field_spec"):
        native.lib.read_fields(uc, BASE, b"\0" * 7)


def test_the_g_store_hook_calls_on_store_exactly_when_it_would_act():
    """native.hook_g_store (gclock's hook on each store to the TLS g slot): the C callback skips the stores
    GoroutineClock._on_store leaves alone (G not counted on this thread, and the stored g not G, or G stored
    inside an injection window or a signal handler) and calls it for every other; without the module every store
    calls it."""
    from types import SimpleNamespace
    G = 0xC000001000
    code = bytes.fromhex("48b8") + G.to_bytes(8, "little") + bytes.fromhex("90" "90")   # movabs rax, G; nop; nop
    nop = BASE + 10
    for reg, imm, stored in ((X.UC_X86_REG_RAX, None, G), (None, G, G), (None, G + 8, G + 8)):
        for tid in (None, 7):
            for held in (False, True):
                for frames in ([], ["frame"]):
                    clock = SimpleNamespace(tid=tid, g=G, held=held)
                    proc = SimpleNamespace(cur=SimpleNamespace(frames=frames))
                    for lib in (native.lib, None):
                        uc = Uc(UC_ARCH_X86, UC_MODE_64)
                        uc.mem_map(BASE, 4096)
                        uc.mem_write(BASE, code)
                        calls = []
                        saved = native.lib
                        native.lib = lib
                        try:
                            native.hook_g_store(uc, lambda u, a, s, d: calls.append((a, s, d)), nop, reg, imm,
                                                clock, proc)
                        finally:
                            native.lib = saved
                        uc.emu_start(BASE, BASE + len(code))
                        acts = lib is None or tid is not None or (stored == G and not held and not frames)
                        assert calls == ([(nop, 1, None)] if acts else []), (reg, imm, tid, held, frames, lib)
    uc = Uc(UC_ARCH_X86, UC_MODE_64)
    for kind, extra in ((3, ()), (0, (clock, proc, -1, 0))):        # the clock and proc go with kind 3 only
        with pytest.raises(TypeError, match="a g-store hook"):
            native.lib.hook_add(uc, kind, print, None, 1, 0, *extra)
