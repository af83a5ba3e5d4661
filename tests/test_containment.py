"""The guest stays contained (issue #40 item 3, emu/linux/mounts.py, sys_file.py): what a program sees of the
host is its working directory and its `--mount`s, and it changes only what is under a `:rw` mount. Every way
out is tried, each answered as Linux answers it in a mount namespace holding only those mounts, with a
read-only bind mount where the mount is `:ro`: siblings whose names extend a mount's, `..` at every depth,
absolute and relative symbolic links (to a file and to a directory) out of a mount, hard links,
/proc/self/root and its like, and writes to a read-only mount through every syscall that writes. After each,
the host tree is byte for byte, mode for mode, what it was.

Most cases drive the kernel model syscall by syscall (guestkernel.Guest); tests/data/go/escape tries the same
from a real program, and where this machine can make a real mount namespace (unshare, chroot) the same binary
run there prints the same lines."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from guestkernel import AT_FDCWD, Guest

from emu import cli
from emu.front import gobuild
from emu.linux import mounts

ENOENT, EBADF, EEXIST, EXDEV, ENOTDIR, EISDIR, EINVAL, EROFS, EPERM = 2, 9, 17, 18, 20, 21, 22, 30, 1
O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_DIRECTORY = 1, 2, 0o100, 0o200, 0o1000, 0o2000, 0o200000
AT_REMOVEDIR = 0x200


def snapshot(root: Path) -> dict:
    """Every path under root: (kind, mode, content or link target)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            q = Path(dirpath) / n
            st = q.lstat()
            if q.is_symlink():
                out[str(q)] = ("link", os.readlink(q))
            elif q.is_dir():
                out[str(q)] = ("dir", st.st_mode)
            else:
                out[str(q)] = ("file", st.st_mode, q.read_bytes())
    return out


@pytest.fixture
def host(tmp_path):
    """host/a (mounted read-only at /m/a), host/rw (read-write at /m/rw), and beside them what must stay out of
    reach: host/ab and host/rwx (names that extend the mounts'), host/secret."""
    h = tmp_path / "host"
    (h / "a" / "sub").mkdir(parents=True)
    (h / "a" / "file.txt").write_text("inside")
    (h / "a" / "sub" / "inner.txt").write_text("inner")
    (h / "ab").mkdir()
    (h / "ab" / "x.txt").write_text("sibling")
    (h / "rwx").mkdir()
    (h / "rwx" / "y.txt").write_text("sibling of rw")
    (h / "secret").mkdir()
    (h / "secret" / "s.txt").write_text("secret")
    (h / "rw").mkdir()
    (h / "rw" / "w.txt").write_text("writable")
    a, rw, secret = h / "a", h / "rw", h / "secret"
    os.symlink(secret / "s.txt", a / "abs_file")            # absolute, to a file out of the mount
    os.symlink(secret, a / "abs_dir")                       # absolute, to a directory
    os.symlink("../secret/s.txt", a / "rel_file")           # relative
    os.symlink("../secret", a / "rel_dir")
    os.symlink("../ab/x.txt", a / "rel_sibling")            # to the sibling whose name extends the mount's
    os.symlink(str(h / "ab"), a / "abs_sibling")
    os.symlink("sub/../../secret/s.txt", a / "deep_rel")
    os.symlink("sub/inner.txt", a / "in_link")              # inside: followed
    os.symlink(secret / "s.txt", rw / "out_file")
    os.symlink(secret, rw / "out_dir")
    os.symlink(secret / "new.txt", rw / "dangling_out")     # would create a file out of the mount
    os.symlink("../rwx", rw / "rel_rwx")
    (tmp_path / "cwd").mkdir()
    return h


@pytest.fixture
def guest(host):
    g = Guest(cwd=str(host.parent / "cwd"),
              mounts=[mounts.parse_mount(f"{host / 'a'}:/m/a"), mounts.parse_mount(f"{host / 'rw'}:/m/rw:rw")])
    g.before, g.allowed = snapshot(host), set()     # allowed: what a test lets change (inside /m/rw)
    yield g
    after = snapshot(host)
    changed = {k for k in set(g.before) | set(after) if g.before.get(k) != after.get(k)}
    assert changed <= g.allowed, sorted(changed - g.allowed)


def test_what_is_inside_is_there(guest, host):
    """The controls: without them every ENOENT below would prove nothing."""
    assert guest.read_file("/m/a/file.txt") == b"inside"
    assert guest.read_file("/m/a/sub/../file.txt") == b"inside"
    assert guest.read_file("/m/a/in_link") == b"inner"            # a host link inside its mount is followed
    assert guest.read_file("/m/rw/w.txt") == b"writable"
    assert guest.read_file("/m/rw/../a/file.txt") == b"inside"     # `..` from one mount into another


def escapes(host: Path) -> list[str]:
    """Paths that name something outside the mounts (every one ENOENT: Linux finds none of them in a
    namespace holding only the mounts, /tmp, /dev and /etc)."""
    secret = str(host / "secret" / "s.txt")
    up = secret.lstrip("/")
    out = ["/m/ab/x.txt", "/m/ab", "/m/rwx/y.txt", "/m/a/../ab/x.txt", "/m/a/sub/../../ab/x.txt",
           "/m/rw/../rwx/y.txt", secret, str(host / "ab" / "x.txt"), str(host / "a" / "file.txt")]
    out += ["/m/a/" + "../" * k + up for k in range(1, 9)]                 # `..` at every depth, and past /
    out += ["/m/a/sub/" + "../" * k + up for k in range(1, 9)]
    out += ["/m/a/" + "../" * k + "ab/x.txt" for k in range(2, 5)]
    out += [f"/m/a/{n}" for n in ("abs_file", "rel_file", "deep_rel", "rel_sibling")]
    out += [f"/m/a/{n}/s.txt" for n in ("abs_dir", "rel_dir")] + ["/m/a/abs_sibling/x.txt"]
    out += ["/m/rw/out_file", "/m/rw/out_dir/s.txt", "/m/rw/rel_rwx/y.txt"]
    out += [f"/proc/{who}/root{secret}" for who in ("self", "thread-self", "1", "1000")]
    out += [f"/proc/self/cwd/{'../' * 9}{up}", "/proc/self/root/m/ab/x.txt",
            f"/dev/../{up}", f"/etc/../{up}", f"/tmp/../{up}", f"//{up}", f"/./{up}"]
    return out


def test_nothing_outside_the_mounts_can_be_read_or_stat(guest, host):
    for path in escapes(host):
        assert guest.read_file(path) == -ENOENT, path
        assert guest.stat(path) == -ENOENT, path
        assert guest.call("chdir", path) in (-ENOENT, -ENOTDIR), path


def test_nor_from_a_working_directory_or_a_directory_descriptor_in_a_mount(guest, host):
    up = str(host / "secret" / "s.txt").lstrip("/")
    assert guest.call("chdir", "/m/a/sub") == 0
    for path in ["../../ab/x.txt", "../abs_dir/s.txt", "../rel_file"] + ["../" * k + up for k in range(1, 10)]:
        assert guest.read_file(path) == -ENOENT, path
    assert guest.read_file("inner.txt") == b"inner"
    d = guest.open("/m/a", O_DIRECTORY)
    assert d >= 0
    for path in ["../ab/x.txt", "rel_dir/s.txt", "abs_sibling/x.txt", "../" * 12 + up]:
        assert guest.open(path, dirfd=d) == -ENOENT, path
    assert guest.read(guest.open("file.txt", dirfd=d)) == b"inside"


def test_a_listing_shows_names_never_what_is_behind_them(guest, host):
    assert guest.call("chdir", "/m") == 0
    d = guest.open(".", O_DIRECTORY)
    buf = guest.alloc(4096)
    n = guest.call("getdents64", d, buf, 4096)
    names = bytes(guest.p.read(buf, n))
    assert b"a\0" in names and b"rw\0" in names and b"ab\0" not in names and b"rwx\0" not in names


def test_tmp_links_and_their_dot_dots_stay_in_the_guests_tree(guest, host):
    secret = str(host / "secret" / "s.txt")
    assert guest.call("symlinkat", secret, AT_FDCWD, "/tmp/l1") == 0        # a link may say anything ...
    assert guest.call("symlinkat", "/m/a", AT_FDCWD, "/tmp/l2") == 0
    assert guest.call("symlinkat", "../../../../../../.." + secret, AT_FDCWD, "/tmp/l3") == 0
    assert guest.call("symlinkat", "/m/a/abs_dir", AT_FDCWD, "/tmp/l4") == 0
    for path in ["/tmp/l1", "/tmp/l2/../ab/x.txt", "/tmp/l3", "/tmp/l4/s.txt"]:
        assert guest.read_file(path) == -ENOENT, path                    # ... it is read in the guest's tree
    assert guest.read_file("/tmp/l2/file.txt") == b"inside"
    buf = guest.alloc(256)
    assert guest.call("readlinkat", AT_FDCWD, "/proc/self/root", buf, 256) == -ENOENT


def read_only_writes(g: Guest) -> list[tuple[str, int, int]]:
    """(what, its answer, Linux's) for every syscall that writes, aimed at the read-only mount /m/a."""
    fd = g.open("/m/a/file.txt")
    d = g.open("/m/a/sub", O_DIRECTORY)
    assert fd >= 0 and d >= 0
    tmp = g.open("/tmp/f", O_CREAT | O_WRONLY)
    return [
        ("open O_WRONLY", g.open("/m/a/file.txt", O_WRONLY), -EROFS),
        ("open O_RDWR", g.open("/m/a/file.txt", O_RDWR), -EROFS),
        ("open O_APPEND", g.open("/m/a/file.txt", O_WRONLY | O_APPEND), -EROFS),
        ("open O_TRUNC, read-only", g.open("/m/a/file.txt", O_TRUNC), -EROFS),
        ("os.Create", g.open("/m/a/file.txt", O_RDWR | O_CREAT | O_TRUNC), -EROFS),
        ("open O_CREAT, new", g.open("/m/a/new.txt", O_WRONLY | O_CREAT), -EROFS),
        ("open O_CREAT, no directory", g.open("/m/a/nodir/new.txt", O_WRONLY | O_CREAT), -ENOENT),
        ("open O_CREAT|O_EXCL, existing", g.open("/m/a/file.txt", O_WRONLY | O_CREAT | O_EXCL), -EEXIST),
        ("open O_CREAT through a link out", g.open("/m/a/abs_dir/new.txt", O_WRONLY | O_CREAT), -ENOENT),
        ("open a directory to write", g.open("/m/a/sub", O_WRONLY), -EISDIR),
        ("open O_CREAT by a directory fd", g.open("made.txt", O_WRONLY | O_CREAT, dirfd=d), -EROFS),
        ("write", g.write(fd, b"x"), -EBADF),
        ("pwrite64", g.call("pwrite64", fd, b"x", 1, 0), -EBADF),
        ("ftruncate", g.call("ftruncate", fd, 0), -EINVAL),
        ("fchmod", g.call("fchmod", fd, 0o777), -EROFS),
        ("truncate", g.call("truncate", "/m/a/file.txt", 0), -EROFS),
        ("truncate a directory", g.call("truncate", "/m/a/sub", 0), -EISDIR),
        ("truncate a missing file", g.call("truncate", "/m/a/none", 0), -ENOENT),
        ("chmod", g.call("chmod", "/m/a/file.txt", 0o777), -EROFS),
        ("fchmodat", g.call("fchmodat", AT_FDCWD, "/m/a/sub", 0o777), -EROFS),
        ("chmod a missing file", g.call("chmod", "/m/a/none", 0o777), -ENOENT),
        ("unlink", g.call("unlinkat", AT_FDCWD, "/m/a/file.txt", 0), -EROFS),
        ("unlink a link", g.call("unlinkat", AT_FDCWD, "/m/a/abs_file", 0), -EROFS),
        ("rmdir", g.call("unlinkat", AT_FDCWD, "/m/a/sub", AT_REMOVEDIR), -EROFS),
        ("mkdir", g.call("mkdirat", AT_FDCWD, "/m/a/newdir", 0o755), -EROFS),
        ("mkdir, existing", g.call("mkdirat", AT_FDCWD, "/m/a/sub", 0o755), -EEXIST),
        ("mkdir by a directory fd", g.call("mkdirat", d, "deeper", 0o755), -EROFS),
        ("rename within", g.call("renameat", AT_FDCWD, "/m/a/file.txt", AT_FDCWD, "/m/a/moved.txt"), -EROFS),
        ("rename out to :rw", g.call("renameat", AT_FDCWD, "/m/a/file.txt", AT_FDCWD, "/m/rw/stolen.txt"), -EXDEV),
        ("rename in from :rw", g.call("renameat", AT_FDCWD, "/m/rw/w.txt", AT_FDCWD, "/m/a/planted.txt"), -EXDEV),
        ("rename in from /tmp", g.call("renameat", AT_FDCWD, "/tmp/f", AT_FDCWD, "/m/a/planted.txt"), -EXDEV),
        ("renameat2", g.call("renameat2", AT_FDCWD, "/m/a/sub", AT_FDCWD, "/m/a/sub2", 0), -EROFS),
        ("symlink", g.call("symlinkat", "/etc/passwd", AT_FDCWD, "/m/a/l"), -EROFS),
        ("symlink, existing name", g.call("symlinkat", "x", AT_FDCWD, "/m/a/file.txt"), -EEXIST),
        ("link within", g.call("linkat", AT_FDCWD, "/m/a/file.txt", AT_FDCWD, "/m/a/hard", 0), -EROFS),
        ("link out to :rw", g.call("linkat", AT_FDCWD, "/m/a/file.txt", AT_FDCWD, "/m/rw/hard", 0), -EXDEV),
        ("link in from /tmp", g.call("linkat", AT_FDCWD, "/tmp/f", AT_FDCWD, "/m/a/hard", 0), -EXDEV),
        ("link, existing name", g.call("linkat", AT_FDCWD, "/m/a/sub/inner.txt", AT_FDCWD, "/m/a/file.txt", 0),
         -EEXIST),
        ("create in /", g.open("/new.txt", O_WRONLY | O_CREAT), -EROFS),
        ("mkdir in /m", g.call("mkdirat", AT_FDCWD, "/m/new", 0o755), -EROFS),
        ("tmp fd", tmp if tmp < 0 else 0, 0),
    ]


def test_a_read_only_mount_is_written_by_no_syscall(guest, host):
    got = read_only_writes(guest)
    assert [(w, r) for w, r, linux in got if r != linux] == []


def test_a_read_write_mount_is_written_only_inside_itself(guest, host):
    rw = host / "rw"
    g = guest
    assert g.open("/m/rw/out_file", O_WRONLY | O_TRUNC) == -ENOENT           # a link out is not followed ...
    assert g.open("/m/rw/dangling_out", O_WRONLY | O_CREAT) == -ENOENT       # ... nor made to create out there
    assert g.open("/m/rw/out_dir/new.txt", O_WRONLY | O_CREAT) == -ENOENT
    assert g.open("/m/rw/rel_rwx/new.txt", O_WRONLY | O_CREAT) == -ENOENT
    assert g.open("/m/rwx/new.txt", O_WRONLY | O_CREAT) == -ENOENT           # the sibling is no mount
    assert g.call("mkdirat", AT_FDCWD, "/m/rw/out_dir/d", 0o755) == -ENOENT
    assert g.call("unlinkat", AT_FDCWD, "/m/rw/out_dir/s.txt", 0) == -ENOENT
    assert g.call("chmod", "/m/rw/out_file", 0o777) == -ENOENT
    assert g.call("truncate", "/m/rw/out_file", 0) == -ENOENT
    assert g.call("renameat", AT_FDCWD, "/m/rw/w.txt", AT_FDCWD, "/m/rw/out_dir/w.txt") == -ENOENT
    assert g.call("renameat", AT_FDCWD, "/m/rw/out_dir/s.txt", AT_FDCWD, "/m/rw/got.txt") == -ENOENT
    assert g.call("renameat", AT_FDCWD, "/m/rw/w.txt", AT_FDCWD, "/m/rwx/w.txt") == -ENOENT
    assert g.call("symlinkat", "/", AT_FDCWD, "/m/rw/root") == -EPERM         # links are not made on the host
    assert g.call("linkat", AT_FDCWD, "/m/rw/w.txt", AT_FDCWD, "/m/rw/hard", 0) == -EPERM
    assert g.call("linkat", AT_FDCWD, "/m/rw/out_file", AT_FDCWD, "/m/rw/hard", 0x400) == -ENOENT
    assert g.call("unlinkat", AT_FDCWD, "/m/rw", AT_REMOVEDIR) < 0            # the mount point stays
    assert g.call("renameat", AT_FDCWD, "/m/rw", AT_FDCWD, "/m/gone") < 0
    # what may change: inside the mount, the links themselves included (unlink does not follow them)
    fd = g.open("/m/rw/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0o600)
    assert fd >= 0 and g.write(fd, b"made") == 4 and g.call("close", fd) == 0
    assert g.call("unlinkat", AT_FDCWD, "/m/rw/out_dir", 0) == 0
    assert g.call("renameat", AT_FDCWD, "/m/rw/out_file", AT_FDCWD, "/m/rw/moved_link") == 0
    assert g.open("/m/rw/moved_link") == -ENOENT
    assert g.call("truncate", "/m/rw/w.txt", 3) == 0
    g.allowed = {str(rw / n) for n in ("new.txt", "out_dir", "out_file", "moved_link", "w.txt")}
    assert (rw / "new.txt").read_bytes() == b"made" and (rw / "w.txt").read_text() == "wri"
    assert os.readlink(rw / "moved_link") == str(host / "secret" / "s.txt")


def test_guest_mount_paths_are_directories_not_string_prefixes():
    assert mounts.within("/m/a/b", "/m/a") and mounts.within("/m/a", "/m/a") and mounts.within("/x", "/")
    assert not mounts.within("/m/ab", "/m/a") and not mounts.within("/m/a", "/m/a/b")
    assert mounts.parse_mount(f"{os.getcwd()}:/devices").guest == "/devices"    # not /dev's
    with pytest.raises(Exception, match="preemu's own"):
        mounts.parse_mount(f"{os.getcwd()}:/dev/x")


# --- a real program --------------------------------------------------------------------------------------
ESCAPE = Path(__file__).parent / "data" / "go" / "escape"
EXPECTED = """\
read /m/a/file.txt: "inside" <nil>
read /m/a/in_link: "inner" <nil>
read /m/ab/x.txt: no such file or directory
read /m/a/../ab/x.txt: no such file or directory
read /m/a/../../../../../SECRET: no such file or directory
read /m/a/abs_file: no such file or directory
read /m/a/rel_file: no such file or directory
read /m/a/abs_dir/s.txt: no such file or directory
read /m/a/rel_dir/s.txt: no such file or directory
read /m/a/rel_sibling: no such file or directory
read /proc/self/root/SECRET: no such file or directory
write /m/a/file.txt: read-only file system
create /m/a/new.txt: read-only file system
create excl /m/a/file.txt: file exists
truncate /m/a/file.txt: read-only file system
chmod /m/a/file.txt: read-only file system
remove /m/a/file.txt: read-only file system
mkdir /m/a/d: read-only file system
rename /m/a/file.txt: read-only file system
rename to /m/rw: invalid cross-device link
symlink /m/a/l: read-only file system
link /m/a/h: read-only file system
link to /m/rw: invalid cross-device link
write /m/rw/out_file: no such file or directory
create /m/rw/out_dir/new.txt: no such file or directory
create /m/rw/w2.txt: <nil>
"""


def _guest_lines(out: str, secret: str) -> str:
    return out.replace(secret.lstrip("/"), "SECRET")


def test_a_real_program_stays_inside(host):
    binary = gobuild.build(ESCAPE).binary
    secret = str(host / "secret" / "s.txt")
    out = io.StringIO()
    code = cli.main(["exec", str(binary), "--json", "--quiet", "--mount", f"{host / 'a'}:/m/a",
                     "--mount", f"{host / 'rw'}:/m/rw:rw", "--", secret], out)
    j = json.loads(out.getvalue())
    assert code == 0 and j["exit_code"] == 0, j["stderr"]
    assert _guest_lines(j["stdout"], secret) == EXPECTED
    assert (host / "rw" / "w2.txt").exists() and not (host / "secret" / "new.txt").exists()
    assert (host / "a" / "file.txt").read_text() == "inside" and (host / "secret" / "s.txt").read_text() == "secret"


def _namespace_ok() -> bool:
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(shutil.which("unshare") is None or not _namespace_ok(),
                    reason="no unprivileged mount namespace on this machine")
def test_linux_in_a_mount_namespace_answers_the_same(host, tmp_path):
    """The same binary under Linux itself: a new root holding /m/a bound read-only, /m/rw read-write and an
    empty /tmp, nothing else of the host (unshare -rm, chroot). It must print exactly what preemu's model
    made it print."""
    binary = gobuild.build(ESCAPE).binary
    root = tmp_path / "root"
    for d in ("m/a", "m/rw", "tmp", "bin"):
        (root / d).mkdir(parents=True)
    shutil.copy(binary, root / "bin" / "escape")
    secret = str(host / "secret" / "s.txt")
    script = (f"mount --bind {host / 'a'} {root}/m/a && mount -o remount,bind,ro {root}/m/a && "
              f"mount --bind {host / 'rw'} {root}/m/rw && mount -t tmpfs none {root}/tmp && "
              f"mount -o remount,bind,ro {root} 2>/dev/null; "
              f"exec chroot {root} /bin/escape {secret}")
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=60)
    if r.returncode != 0 and "chroot" in r.stderr:
        pytest.skip(f"chroot refused here: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    assert _guest_lines(r.stdout, secret) == EXPECTED


def test_outside_the_mounts_a_change_is_erofs_where_the_root_holds_the_name_else_enoent(guest):
    """/ is read-only: what would make or remove a name there is EROFS (mnt_want_write before the lookup);
    what needs an existing file finds none (ENOENT), as the path walk fails first."""
    assert guest.call("mkdirat", AT_FDCWD, "/new", 0o755) == -EROFS
    assert guest.call("unlinkat", AT_FDCWD, "/none", 0) == -EROFS
    assert guest.call("symlinkat", "x", AT_FDCWD, "/l") == -EROFS
    assert guest.call("chmod", "/none", 0o777) == -ENOENT
    assert guest.call("truncate", "/none", 0) == -ENOENT
    assert guest.call("truncate", "/m", 0) == -EISDIR
    assert guest.call("mkdirat", AT_FDCWD, "/nodir/new", 0o755) == -ENOENT
