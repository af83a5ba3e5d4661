"""A guest memory limit (issue #37 item 6): past --max-memory an mmap fails with ENOMEM and Go ends with its
own "out of memory" (exit 2); --max-memory's sizes; exec's exit status with --json as without it."""
import json

import pytest

from conftest import cli_run
from emu.linux import memory


run = cli_run


def test_a_program_allocating_forever_ends_out_of_memory():
    # --budget: were the limit ignored, the program would stop starved (exit 1), not take the host's memory
    code, out, err = run("exec", "tests/data/go/hog", "--max-memory", "256M", "--quiet", "--budget", "100000000")
    assert code == 2 and "fatal error: runtime: out of memory" in err
    mib = [int(ln.split()[1]) for ln in out.splitlines()]
    assert 128 <= mib[-1] < 256                      # what it got before the limit, less the runtime's own
    code, out, err = run("exec", "tests/data/go/hog", "--max-memory", "256M", "--json", "--budget", "100000000")
    j = json.loads(out)
    assert code == 2 and j["exit_code"] == 2 and "out of memory" in j["stderr"]


def test_the_limit_counts_what_is_accessible_not_reservations():
    from unicorn import UC_ARCH_X86, UC_MODE_64, Uc
    mem = memory.AddressSpace(Uc(UC_ARCH_X86, UC_MODE_64), limit=8 << 20)
    assert mem.mmap(0, 64 << 20, memory.PROT_NONE, 0x22) > 0              # a reservation is free
    a = mem.mmap(0, 6 << 20, 3, 0x22)
    assert a > 0 and mem.mmap(0, 4 << 20, 3, 0x22) == -12                 # 6 + 4 > 8: ENOMEM
    assert mem.mprotect(a, 2 << 20, 1) == 0                               # already accessible: not counted again
    assert mem.munmap(a, 4 << 20) == 0 and mem.mmap(0, 4 << 20, 3, 0x22) > 0


@pytest.mark.parametrize("size, message", [("12Q", "is not a size"), ("100K", "at least 1M"), ("5 MiBs", "is not a size")])
def test_a_bad_size_is_exit_2(size, message):
    code, out, err = run("exec", "tests/data/go/hog", "--max-memory", size)
    assert code == 2 and message in err


def test_an_unsupported_syscall_is_exit_2_with_json_too():
    code, out, err = run("exec", "tests/data/go/unsupported", "--json")
    assert code == 2 and "unsupported syscall" in json.loads(out)["error"]
