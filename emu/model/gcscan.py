"""GC stack scan of an asynchronously preempted goroutine, mark and sweep (mirrors runtime/mgcmark.go
scanstack/scanframeworker/scanConservative and mgcsweep.go, as FACTS.md §5 describes them).

Roots: precise globals (`;@data ... ptrs`), the goroutine's stack, and in the go1.27 layout the
G's xRegs block (xRegScan, conservative). Frames, innermost first: asyncPreempt2 (precise: no
pointers), the asyncPreempt frame (conservative over [sp, varp): the saved GPRs, the RFLAGS word
and in go1.14 the X registers), the interrupted frame (conservative over [sp, varp): its locals and
outgoing-argument area, not the saved-BP slot at its top; and over its incoming-argument area
[argp, argp+argBytes), which is empty for preemu's .s functions: they declare no argument size), then
every caller precisely from the stack map at its call site (`;@ptrs`). A conservative word that
points into an allocated object (interior pointers too) marks it; one that points into the stack is
a stack pointer (counted), which makes the precise frames' stack object it points into (Go binaries:
FUNCDATA_StackObjects) a root scanned by its type. Marked objects are scanned through their
type's pointer words when they have one (Go binaries, `;@type` allocations), else conservatively. Mutant scanners for self-testing: "precise-interrupted" (scan the
interrupted frame with a stack map it does not have) and "skip-save-area".
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .heap import POISON, Heap
from .unwind import Frame

SCANNERS = ("go", "precise-interrupted", "skip-save-area")


@dataclass
class ScanResult:
    marked: set[int] = field(default_factory=set)            # object bases
    conservative_only: set[int] = field(default_factory=set)  # marked only through conservative roots
    stack_pointers: int = 0
    roots: list[tuple[str, int, int]] = field(default_factory=list)   # (where, slot address, object base)


_CANDIDATES: dict[tuple, list[int]] = {}
_CACHED_FROM = 64           # words: below this a lookup costs about what the loop does


def _candidates(data: bytes, words, hb: int, hl: int, slo: int, shi: int) -> list[int]:
    """Indices of the words that point into [hb, hl) or [slo, shi). A pure function of the bytes and
    the ranges, so a large block (an xRegs block, 264 words) seen again is not looked through again:
    the vector registers a goroutine saves are often the same at every preemption."""
    key = (data, hb, hl, slo, shi) if len(words) >= _CACHED_FROM else None
    if key is not None:
        hit = _CANDIDATES.get(key)
        if hit is not None:
            return hit
    lo, hi = min(hb, slo), max(hl, shi)           # one comparison rejects almost every word
    out = [i for i, v in enumerate(words) if lo <= v < hi and (hb <= v < hl or slo <= v < shi)]
    if key is not None:
        if len(_CANDIDATES) >= 4096:
            _CANDIDATES.clear()
        _CANDIDATES[key] = out
    return out


def scan(read, heap: Heap, prog, frames: list[Frame], stack_lo: int, stack_hi: int,
         globals_: list[tuple[int, int]], xregs: tuple[int, int] | None, scanner: str = "go") -> ScanResult:
    """Mark every object reachable from the roots; return what was marked and how.

    The steps, in Go's order: the globals (_scan_globals), the stack's roots innermost frame first
    (_stack_roots, _scan_stack), the precise frames' stack objects something points into
    (_scan_stack_objects), then the heap from every object marked so far (_drain)."""
    if scanner not in SCANNERS:
        raise ValueError(f"unknown scanner {scanner!r}")
    res = ScanResult()
    roots = res.roots
    find = heap.find
    hb, hl = heap.base, heap.next                 # objects lie in [base, next): the arena's allocated part
    precise: set[int] = set()
    conservative: set[int] = set()

    stack_ptrs: list[tuple[int, bool]] = []      # (pointer into the stack, found conservatively)

    def consider(where: str, slot: int, val: int, is_precise: bool) -> None:
        if stack_lo <= val < stack_hi:
            res.stack_pointers += 1
            stack_ptrs.append((val, not is_precise))
            return
        o = find(val)
        if o is None or o.freed_at is not None:
            return
        (precise if is_precise else conservative).add(o.base)
        roots.append((where, slot, o.base))

    ranges = (hb, hl, stack_lo, stack_hi)
    _scan_globals(read, globals_, ranges, consider)
    todo, objects = _stack_roots(prog, frames, xregs, scanner)
    _scan_stack(read, todo, ranges, consider)
    _scan_stack_objects(read, stack_ptrs, objects, ranges, consider)
    if not (precise or conservative):
        return res
    res.marked, reach_precise = _drain(read, find, hb, hl, precise, conservative)
    res.conservative_only = res.marked - reach_precise
    return res


def _scan_globals(read, globals_: list[tuple[int, int]], ranges: tuple[int, int, int, int], consider) -> None:
    """The precise globals: every word that points into the heap or the stack is a root."""
    if not globals_:
        return
    hb, hl, stack_lo, stack_hi = ranges
    # one read covering every global (a Go binary has thousands of pointer words)
    lo = min(a for a, _ in globals_)
    words = memoryview(read(lo, max(a + n for a, n in globals_) - lo)).cast("Q")
    for g_addr, size in globals_:
        for i in range((g_addr - lo) // 8, (g_addr - lo + size) // 8):
            v = words[i]
            if hb <= v < hl or stack_lo <= v < stack_hi:
                consider("global", lo + 8 * i, v, True)


def _stack_roots(prog, frames: list[Frame], xregs: tuple[int, int] | None, scanner: str):
    """The stack roots in scan order, innermost first: (where, lo, hi) conservative ranges and (where, slot,
    None) precise slots; and the precise frames' stack objects (where, address, size, ptrBytes, pointer words)."""
    todo: list[tuple[str, int, int | None]] = []
    objects: list[tuple[str, int, int, int, tuple[int, ...]]] = []    # the precise frames' stack objects
    if xregs is not None:
        todo.append(("xRegs block", xregs[0], xregs[0] + xregs[1]))
    for fr in frames:
        kind = fr.kind
        if kind == "asyncPreempt2":
            continue                                  # precise, and holds no pointers
        if kind == "asyncPreempt":
            if scanner != "skip-save-area":           # [sp, varp): everything but saved BP and return PC
                todo.append(("asyncPreempt save area", fr.sp, varp(fr)))
        elif kind == "interrupted":
            if scanner != "precise-interrupted":
                todo.append((f"interrupted frame {fr.func}", fr.sp, varp(fr)))
                argp = fr.sp + fr.size + 8            # frame.argp = fp (amd64: above the return address)
                todo.append((f"interrupted frame {fr.func} arguments", argp, argp + arg_bytes(prog, fr)))
        else:
            todo += [(f"frame {fr.func} (stack map)", fr.sp + off, None) for off in (frame_ptr_slots(prog, fr) or ())]
            objects += frame_stack_objects(prog, fr)
    return todo, objects


def _scan_stack(read, todo: list[tuple[str, int, int | None]], ranges: tuple[int, int, int, int], consider) -> None:
    """Scan the stack roots _stack_roots listed: precise slots, and conservative ranges word by word."""
    hb, hl, stack_lo, stack_hi = ranges
    for where, lo, hi in todo:
        if hi is None:                                # a stack-map slot
            consider(where, lo, int.from_bytes(read(lo, 8), "little"), True)
            continue
        n = (hi - lo) // 8
        if n > 0:                 # only words that could point into the heap or the stack are looked up
            data = read(lo, 8 * n)
            words = memoryview(data).cast("Q")
            for i in _candidates(data, words, hb, hl, stack_lo, stack_hi):
                consider(where, lo + 8 * i, words[i], False)


def _scan_stack_objects(read, stack_ptrs: list[tuple[int, bool]], objects: list, ranges: tuple[int, int, int, int],
                        consider) -> None:
    """scanstack's stack objects (mgcmark.go:1008-1050): an object of a precise frame is scanned through its
    pointer mask once something points into it -- its words trusted only if that pointer was found
    precisely (scanblock), else looked at conservatively (scanConservative with the mask); what it
    holds may point to further stack objects (consider adds to stack_ptrs, which this loop drains)."""
    hb, hl, stack_lo, stack_hi = ranges
    while stack_ptrs and objects:
        p, cons = stack_ptrs.pop()
        hit = next((ob for ob in objects if ob[1] <= p < ob[1] + ob[2]), None)
        if hit is None:
            continue
        objects.remove(hit)
        where, lo, _size, ptrbytes, ptr_words = hit
        n = ptrbytes // 8
        words = memoryview(read(lo, 8 * n)).cast("Q") if n else ()
        for i in ptr_words:                       # scanConservative takes the object's mask too
            v = words[i]
            if hb <= v < hl or stack_lo <= v < stack_hi:
                consider(where, lo + 8 * i, v, not cons)


def _drain(read, find, hb: int, hl: int, precise: set[int], conservative: set[int]) -> tuple[set[int], set[int]]:
    """greyobject / drain: marked objects are scanned through their type's pointer words when they have one
    (scanobject, mgcmark.go), else conservatively. Returns (every object marked, those reachable from a
    precise root)."""
    work = list(precise | conservative)
    seen = set(work)
    reach_precise = set(precise)
    while work:
        b = work.pop()
        o = find(b)
        via_precise = b in reach_precise
        n = o.size // 8
        words = memoryview(read(o.base, 8 * n)).cast("Q") if n else ()
        if o.ptr_words is not None:
            words = [words[i] for i in o.ptr_words if i < n]
        for v in words:
            if not hb <= v < hl:                  # not into the heap's allocated part: no object there
                continue
            t = find(v)
            if t is None or t.freed_at is not None:
                continue
            if via_precise and t.base not in reach_precise:
                reach_precise.add(t.base)
                work.append(t.base)
                seen.add(t.base)
            elif t.base not in seen:
                seen.add(t.base)
                work.append(t.base)
    return seen, reach_precise


def sweep_heap(heap: Heap, marked: set[int], write, boundary: int) -> list:
    """Free every allocated, unmarked object: poison its memory and remember who freed it."""
    freed = []
    for o in heap.objs:
        if o.freed_at is None and o.base not in marked:
            o.freed_at = boundary
            write(o.base, bytes([POISON]) * o.size)
            freed.append(o)
    return freed


def varp(fr: Frame) -> int:
    """frame.varp (traceback.go:384-408): fp - 8 (the return address) - 8 (the saved BP) when the frame is not
    empty; scanframeworker scans [sp, varp) conservatively (mgcmark.go:1094-1107)."""
    top = fr.sp + fr.size                 # the return-address slot, = fp - 8
    return top - 8 if top > fr.sp else top


def arg_bytes(prog, fr: Frame) -> int:
    """frame.argBytes() (stkframe.go:72): the function's argument+result size when the function table
    knows it (Go binaries); scanframeworker scans [argp, argp+argBytes) conservatively
    (mgcmark.go:1110-1115). preemu's .s functions declare no argument size. Left out: the
    ArgsSizeUnknown case, where Go falls back to the argument map's length."""
    binary = getattr(prog, "binary", None)
    gf = binary.func_for(fr.pc) if binary is not None else None
    return gf.args if gf is not None and gf.args > 0 else 0


def frame_stack_objects(prog, fr: Frame) -> list[tuple[str, int, int, int, tuple[int, ...]]]:
    """The allocated stack objects of a frame (FUNCDATA_StackObjects; Go binaries only) as (where, address,
    size, ptrBytes, pointer words)."""
    binary = getattr(prog, "binary", None)
    gf = binary.func_for(fr.pc) if binary is not None else None
    if gf is None:
        return []
    from ..front.gofuncdata import Frame as GoFrame        # loaded already: prog has a binary (.s sweeps never import it)
    fp = fr.sp + fr.size + 8                      # frame.fp = frame.argp (amd64: above the return address)
    return [(f"stack object of {fr.func} ({ob.size} bytes at {'varp' if ob.off < 0 else 'argp'}{ob.off:+d})",
             base, ob.size, ob.ptrbytes, ob.ptr_words)
            for base, ob in binary.allocated_stack_objects(gf, GoFrame(fr.sp, fp, varp(fr), fp))]


def frame_ptr_slots(prog, fr: Frame):
    """The stack map of a caller frame: the ;@ptrs offsets at its call site."""
    if fr.call_pc is None:
        return None
    insn = prog.insn_at(fr.call_pc)
    return insn.ptr_slots if insn is not None else None

