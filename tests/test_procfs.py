"""/proc/self/maps (emu/linux/procfs.py): a Go program reading it prints what it prints natively: the binary's
segments with their permissions, offsets, device, inode and path, the anonymous bss, [vdso] and [stack], a regular
file of size 0 that root may open for writing and whose write is EINVAL. runtime/pprof's TestConvertCPUProfile
and TestConvertMemProfile failed on its absence ("open /proc/self/maps: no such file or directory")."""
import subprocess

from conftest import DATA

from emu.front import gobuild
from emu.linux import procfs

from test_sockets import _exec_json


def test_proc_self_maps_as_natively():
    prog = DATA / "go" / "procmaps"
    binary = gobuild.build(prog).binary
    native = subprocess.run([str(binary)], capture_output=True, text=True, check=True, timeout=60).stdout
    code, j = _exec_json(prog)
    assert code == 0 and j["stdout"] == native
    assert "00400000-" in native and "r-xp 00000000" in native and str(binary) in native
    for line in ("bss after the binary, anonymous: true", "[vdso] r-xp [stack] rw-p",
                 "a regular file of size 0 true"):
        assert line in native.splitlines()


def test_maps_names_the_paths_of_this_process_only():
    class P:
        pid = 4242
    assert procfs.is_maps(P, "/proc/self/maps") and procfs.is_maps(P, "/proc/4242/maps")
    assert not procfs.is_maps(P, "/proc/1/maps") and not procfs.is_maps(P, "/proc/self/status")
