"""The runtime's random state in a live process, and drawing it again: what makes a second reference run legitimate.

A Go program draws randomness after start-up from per-M generators, not from the kernel: `rand()` reads the
M's ChaCha8 state (runtime/rand.go:156-176, `mp.chacha8`), `cheaprand`/`cheaprand64` the M's cheap states
(runtime/rand.go:231-300, `mp.cheaprand`, `mp.cheaprand64`), and a new M is seeded from `globalRand`
(runtime/rand.go:27-32, 186-200 `mrandinit`). Map seeds (internal/runtime/maps/map.go `m.seed = uintptr(rand())`),
iteration start offsets, `hash/maphash.MakeSeed`, `sync.Map`'s hash-trie seed, `math/rand`'s and
`math/rand/v2`'s global generators and the scheduler's steal order all come from there. A goroutine that is
preempted may resume on another M and so draw other numbers: a native run may do the same.

`reseed(p, rng)` gives every M (the `runtime.allm` list through `m.alllink`) and `globalRand` a fresh state drawn
from `rng`, as a run started with other AT_RANDOM bytes would have: a ChaCha8 state gets a new seed and an
exhausted buffer (i = n), so the runtime's next `rand()` refills it with a real ChaCha8 block of that seed
(internal/chacha8rand/chacha8.go Next/Refill); the cheap states get any value (every value is reachable).
The kernel's own generator (getrandom(2), /dev/urandom) is drawn again too. Go 1.21's `m.fastrand` (before
ChaCha8, runtime/runtime2.go of 1.21) is handled the same way.

Left out: the AES hash keys (`runtime.aeskeysched`, `hashkey`) drawn once at `alginit`: maps already built hash
with them, so they cannot change mid-run. A value that depends on them alone is the same in every reference.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import EmuError

#: per-M generator fields: (name in runtime.m, kind). Go 1.22+: chacha8, cheaprand, cheaprand64; 1.21: fastrand
M_FIELDS = (("chacha8", "chacha8"), ("cheaprand", "any"), ("cheaprand64", "any"), ("fastrand", "any"))
#: internal/chacha8rand.State (internal/chacha8rand/chacha8.go): buf [32]uint64, seed [4]uint64, i, n, c uint32
CHACHA_SEED, CHACHA_I, CHACHA_N = 256, 288, 292


@dataclass(frozen=True)
class Layout:
    allm: int                         # address of runtime.allm
    alllink: int                      # offset of m.alllink
    fields: tuple                     # ((offset, size, kind), ...) of the per-M generators present
    global_state: int | None          # address of globalRand.state (a chacha8rand.State), None before Go 1.22


def layout(binary_path: str) -> Layout:
    """Where the random state lives in this binary (its DWARF; cached under the build cache by content)."""
    from ..front import gobuild, godwarf
    raw = Path(binary_path).read_bytes()
    cache = gobuild.cache_dir() / "layout" / f"rng-{hashlib.sha256(raw).hexdigest()}.json"
    if cache.exists():
        d = json.loads(cache.read_text())
        return Layout(d["allm"], d["alllink"], tuple(tuple(f) for f in d["fields"]), d["global_state"])
    try:
        with godwarf.GoDwarf.open(binary_path) as dw:
            allm = dw.global_addr("runtime.allm")
            alllink = dw.field("runtime.m", "alllink").offset
            fields = []
            for name, kind in M_FIELDS:
                try:
                    f = dw.field("runtime.m", name)
                except godwarf.DwarfError:
                    continue
                fields.append((f.offset, f.size, kind))
            state = None
            if any(k == "chacha8" for _, _, k in fields):
                # var globalRand struct { lock mutex; seed [32]byte; state chacha8rand.State; init bool }
                mutex = dw.struct("runtime.mutex").size
                state = dw.global_addr("runtime.globalRand") + ((mutex + 32 + 7) & ~7)
    except godwarf.DwarfError as e:
        raise EmuError(f"the runtime's random state cannot be located: {e}") from None
    out = Layout(allm, alllink, tuple(fields), state)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"allm": allm, "alllink": alllink, "fields": fields, "global_state": state}))
    return out


def all_ms(p, lay: Layout) -> list[int]:
    """The addresses of every M (runtime.allm, linked through m.alllink; runtime/proc.go mcommoninit)."""
    out, m = [], p.read_u64(lay.allm)
    while m and len(out) < 10_000:
        out.append(m)
        m = p.read_u64(m + lay.alllink)
    return out


def _chacha8(p, at: int, rng: random.Random) -> None:
    p.write(at + CHACHA_SEED, rng.getrandbits(256).to_bytes(32, "little"))
    n = p.read(at + CHACHA_N, 4)
    p.write(at + CHACHA_I, n)                   # exhausted: the next Next() fails and Refill uses the new seed


def reseed(p, lay: Layout, rng: random.Random) -> int:
    """Draw every M's generators, globalRand's and the kernel's again from `rng`; returns the Ms reseeded."""
    ms = all_ms(p, lay)
    for m in ms:
        for off, size, kind in lay.fields:
            if kind == "chacha8":
                _chacha8(p, m + off, rng)
            else:
                p.write(m + off, rng.getrandbits(8 * size).to_bytes(size, "little"))
    if lay.global_state is not None:
        _chacha8(p, lay.global_state, rng)
    p.rng = random.Random(rng.getrandbits(64))   # getrandom(2) and /dev/urandom (process.Process.rng)
    return len(ms)
