"""Small results remembered on disk under preemu's cache directory (front/gobuild.cache_dir: KIND/KEY.json), for
the start-up work every process would otherwise repeat on the same input: Keystone's machine code for the
engine's native callbacks and the vDSO (nativehook.assemble), the RDTSC sites of a binary
(linux/elfimage.find_insns) and its AVX sites (avx.scan_cached).

The key is a digest of everything the result depends on (the input's bytes, the tool's identity, the
caller's format version), so an entry for other inputs is never found. An entry is written whole (a
temporary file renamed over it) and carries the SHA-256 of its value: an entry that is damaged, cut short or
not preemu's is ignored, computed again and rewritten. A cache directory that cannot be used costs only the
work. Mirrors no Go source.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

from ..core.errors import EmuError

_roots: dict[tuple, Path | None] = {}


def key(*parts) -> str:
    """A digest of `parts` (bytes, or anything str() names), each length-prefixed so that no two lists collide."""
    h = hashlib.sha256()
    for p in parts:
        b = p if isinstance(p, (bytes, bytearray)) else str(p).encode()
        h.update(len(b).to_bytes(8, "little") + b)
    return h.hexdigest()[:40]


def cache_root() -> Path | None:
    """preemu's cache directory, or None when it cannot be used (looked up once per PREEMU_CACHE and HOME)."""
    where = (os.environ.get("PREEMU_CACHE"), os.environ.get("HOME"))
    if where not in _roots:
        from ..front.gobuild import cache_dir
        try:
            _roots[where] = cache_dir()
        except EmuError:
            _roots[where] = None
    return _roots[where]


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def remembered(kind: str, k: str, compute: Callable[[], object], root: Path | None = None):
    """compute()'s value (JSON: tuples come back as lists), read from the entry `kind`/`k` when it is there and
    whole, else computed and stored. `root`: the cache directory (default: preemu's; None when unusable)."""
    root = cache_root() if root is None else root
    if root is None:
        return compute()
    f = root / kind / f"{k}.json"
    try:
        entry = json.loads(f.read_text())
        if isinstance(entry, dict) and entry.get("sha256") == _digest(entry.get("value")):
            return entry["value"]
    except (OSError, ValueError):
        pass                                     # none yet, or not whole: computed again below
    value = compute()
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"sha256": _digest(value), "value": value}))
        tmp.replace(f)
    except OSError:
        pass                                     # a cache that cannot be written only costs the work next time
    return value
