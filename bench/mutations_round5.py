"""An independent mutation pass (issue #51 item 5) over code this round added: the run's cgroup (memory.Cgroup:
--max-memory, --max-pids), what it is charged with (pages, /tmp, kept output, processes and threads), mounted
files read on demand, and the Ctrl-C fixes (engine/interrupt.py, cli.main, shards' worker start). Unlike
bench/mutations.py, whose every mutation is known killed, this lists what was tried, survivors included, and
reports killed / total. Each runs with bench/mutations.py's mechanism (a scratch copy, the named tests).
Run `.venv/bin/python bench/mutations_round5.py [NAME ...]` (from bench/).

Result (2026-12-07, the branch `robust`): 25/25 killed. The first pass killed 22/25; the survivors were
thread-exit-keeps-task and exit-keeps-process-tasks (no test saw tasks given back: now
test_a_thread_that_exits_and_a_process_that_ends_give_their_tasks_back) and holder-only-current (the test's
assertions sat after the raise a mutant makes: now checked after the block).

Second part (branch `robust2`: item 4's fixes, bounded pipes and sockets), 26 more. The 9 pipe/socket
mutations, each with the pipefull test: 6/9 killed at first (pipe-no-merge, pipe-epollout-always and
pipe-ebusy-off-by-one survived: tests/data/go/pipefull now fills a pipe with 100-byte writes, polls a full one
through epoll_pwait and resizes to exactly the slots in use), then 9/9. The 17 others: 16/16 killed
(tail-unbounded not run: its mutant runs the spinning test to the process's own budget, a hang by
construction). Those runs applied each mutation in the worktree itself with the same tests (the scratch-copy
run below takes about two minutes a mutation on a loaded machine; pipe-slots-never-freed ran past ten there).

Third part (2026-12-08, main): the AVX executor of --cpu v3/v4 (hostexec, hostcpu, avxexec, avxmem), 16 more, and
the two first-part entries the layout had moved (tmp-unlink-keeps-charge, scenario-key-wins: re-aimed, killed).
The first pass killed 11 of 16 and showed: avx-flags-not-back survived (no test needed a flag the host *sets*:
test_bytealg_instructions now runs a VPTEST that sets ZF and CF), avx-sib-disp32-kept (no operand without a base:
test_a_host_executed_operand_is_read_from_its_address), avx-store-unchecked (equivalent: avxmem checks every page of
a store before writing a byte and before the registers change, so hostexec's own check was double work and is
gone, with the entry), avx-vex-xb-kept (equivalent: a RIP-relative operand has no SIB, so VEX/EVEX.X is ignored,
and RIP-relative addressing ignores .B, SDM vol. 2 table 2-7). After: 15 of the 15 non-equivalent killed
(avx-partial-all-bytes and avx-sib-disp32-kept by a crash of the test process: the mutant's routine reads past its
scratch). In all: 67 mutations; 65 killed, 1 equivalent survivor (avx-vex-xb-kept), 1 not run (tail-unbounded).
"""
from __future__ import annotations

import sys

from mutations import run

M = "tests/test_memory_limit.py::"
C = "tests/test_ctrl_c.py::"
R5 = "tests/test_bad_input_round5.py::"
PIPE = "tests/test_pipes.py::test_a_pipe_holds_what_linux_holds_and_its_writer_waits_as_natively"

MUTATIONS = {
    "cg-charge-unbounded": ("emu/linux/memory.py",
                            "        return self.max_memory is None or n <= 0 or self.total() + n <= self.max_memory",
                            "        return True", [M + "test_tasks_past_pids_max_are_eagain_and_past_memory_enomem",
                                                   M + "test_address_spaces_of_one_run_share_the_limit"]),
    "cg-pids-unbounded": ("emu/linux/memory.py", "        if self.max_pids is not None and self.pids >= self.max_pids:",
                          "        if False:", [M + "test_tasks_past_pids_max_are_eagain_and_past_memory_enomem"]),
    "cg-pid-never-freed": ("emu/linux/memory.py", "        self.pids = max(0, self.pids - 1)\n", "",
                           [M + "test_tasks_past_pids_max_are_eagain_and_past_memory_enomem"]),
    "cg-enomem-as-eagain": ("emu/linux/memory.py", "            return 12                # ENOMEM",
                            "            return 11", [M + "test_tasks_past_pids_max_are_eagain_and_past_memory_enomem"]),
    "anon-unmap-not-uncharged": ("emu/linux/memory.py", "            self._charge(-(e - s))\n", "",
                                 [M + "test_the_limit_counts_what_is_accessible_not_reservations"]),
    "anon-release-no-op": ("emu/linux/memory.py", "        self._charge(-self.charged)\n", "        pass\n",
                           [M + "test_address_spaces_of_one_run_share_the_limit"]),
    "anon-map-not-charged": ("emu/linux/memory.py", "            self._charge(e - s)\n", "",
                             [M + "test_address_spaces_of_one_run_share_the_limit"]),
    "tmp-write-unbounded": ("emu/linux/tmpfs.py", "        if room is not None and self.pos + len(data) > len(d) + room:",
                            "        if False:", [M + "test_tmpfs_writes_are_charged_cut_short_then_enospc_and_unlink_gives_back"]),
    "tmp-rewrite-charged-again": ("emu/linux/tmpfs.py",
                                  "        p.tmpfs.grown(len(d), max(len(d), self.pos + len(data)))",
                                  "        p.tmpfs.grown(len(d), len(d) + len(data))",
                                  [M + "test_tmpfs_writes_are_charged_cut_short_then_enospc_and_unlink_gives_back"]),
    "tmp-short-write-is-enospc": ("emu/linux/tmpfs.py", "            if fit <= 0:", "            if True:",
                                  [M + "test_tmpfs_writes_are_charged_cut_short_then_enospc_and_unlink_gives_back"]),
    "tmp-unlink-keeps-charge": ("emu/linux/tmpfs.py", "        if self.links(node) == 0:\n            self._drop(node)",
                                "        if False:\n            self._drop(node)",
                                [M + "test_tmpfs_writes_are_charged_cut_short_then_enospc_and_unlink_gives_back"]),
    "tmp-truncate-unbounded": ("emu/linux/tmpfs.py", "        if room is not None and length - len(node.data) > room:",
                               "        if False:",
                               [M + "test_tmpfs_writes_are_charged_cut_short_then_enospc_and_unlink_gives_back"]),
    "tmp-otrunc-keeps-charge": ("emu/linux/tmpfs.py", "            self._drop(node)\n            node.data.clear()",
                                "            node.data.clear()",
                                [M + "test_tmpfs_writes_are_charged_cut_short_then_enospc_and_unlink_gives_back"]),
    "out-tail-keeps-everything": ("emu/linux/services.py", "                del stream.data[:cut]", "                pass",
                                  [M + "test_streamed_output_keeps_only_its_tail"]),
    "out-kept-ignores-limit": ("emu/linux/services.py", "                room = min(room, cg)", "                pass",
                               [M + "test_kept_output_stops_at_the_memory_limit"]),
    "out-dropped-uncounted": ("emu/linux/services.py", "            stream.dropped += len(data) - len(kept)\n", "",
                              [M + "test_kept_output_stops_at_the_memory_limit"]),
    "hostfile-offset-ignored": ("emu/linux/sys_file.py", "                f.seek(off)\n", "",
                                [M + "test_mounted_files_are_read_on_demand"]),
    "fork-ignores-cgroup": ("emu/linux/proctable.py", "        if err:\n            return err\n", "",
                            [M + "test_a_fork_bomb_ends_at_the_process_limit_with_eagain"]),
    "thread-ignores-cgroup": ("emu/linux/sys_proc.py", "    if err:\n        return -err\n", "",
                              [M + "test_many_threads_end_at_the_process_limit_with_eagain"]),
    "thread-exit-keeps-task": ("emu/linux/scheduling.py", "            self.cgroup.task_gone(THREAD_COST)", "            pass",
                               [M + "test_a_thread_that_exits_and_a_process_that_ends_give_their_tasks_back"]),
    "exit-keeps-process-tasks": ("emu/linux/process.py", "            self.cgroup.task_gone(THREAD_COST)\n", "            pass\n",
                                 [M + "test_a_thread_that_exits_and_a_process_that_ends_give_their_tasks_back"]),
    "max-pids-not-passed": ("emu/cli/execute.py", "max_memory=a.max_memory, max_pids=a.max_pids, cpu=a.cpu)",
                            "max_memory=a.max_memory, cpu=a.cpu)",
                            [M + "test_many_threads_end_at_the_process_limit_with_eagain"]),
    "wrapped-ctrl-c-internal": ("emu/cli/command.py", "        if _caused_by_ctrl_c(e):", "        if False:",
                                [C + "test_a_ctrl_c_python_wrapped_in_another_error_is_130"]),
    "holder-only-current": ("emu/engine/interrupt.py", "        p = engine_holder(frame)\n", "        p = None\n",
                            [C + "test_a_sigint_in_any_engines_callback_stops_that_engine_and_raises_when_the_commands_engine_use_ends"]),
    "unraised-dropped-at-exit": ("emu/engine/interrupt.py", "        if unraised and exc_type is None:", "        if False:",
                                 [C + "test_a_sigint_in_any_engines_callback_stops_that_engine_and_raises_when_the_commands_engine_use_ends"]),
    # --- the second helper's part (branch robust2): item 4's fixes and bounded pipes and sockets ----------------
    "pipe-no-merge": ("emu/linux/fds.py", "k = chars if merge and chars and self.slots and self.slots[-1] + chars <= PAGE else 0",
                      "k = 0", [PIPE]),
    "pipe-nonblock-partial-refused": ("emu/linux/fds.py", "        return k or -EAGAIN", "        return -EAGAIN", [PIPE]),
    "pipe-slots-never-freed": ("emu/linux/fds.py", "                if not self.slots[0]:\n                    self.slots.popleft()",
                               "                if False:\n                    self.slots.popleft()", [PIPE]),
    "pipe-no-wake-after-read": ("emu/linux/fds.py", "        if r > 0:                   # room freed",
                                "        if r > 10**9:               # room freed", [PIPE]),
    "pipe-epollout-always": ("emu/linux/fds.py", "            return (EPOLLOUT if st.writable() else 0)",
                             "            return (EPOLLOUT)", [PIPE]),
    "pipe-ebusy-off-by-one": ("emu/linux/sys_io.py", "    if pages < len(st.slots):", "    if pages < len(st.slots) - 1:",
                              [PIPE]),
    "pipe-size-not-rounded": ("emu/linux/sys_io.py", "    pages = 1 << max(0, (-(-arg // F.PAGE) - 1).bit_length())",
                              "    pages = -(-arg // F.PAGE)", [PIPE]),
    "tcp-unbounded": ("emu/linux/tcp.py",
                      "    return F.queue_write(p, peer.rx, data, sigpipe, nonblock, lambda t: _broken(p, t, s, sigpipe))",
                      "    peer.rx.put(data); p.wake_pipe_readers(); p.wake_pollers(); return len(data)", [PIPE]),
    "unix-stream-unbounded": ("emu/linux/sys_socket.py",
                              "    ab, ba = (F.PipeState(capacity=F.SOCK_STREAM_BUF, slots=None) for _ in range(2))",
                              "    ab, ba = (F.PipeState(capacity=1 << 40, slots=None) for _ in range(2))", [PIPE]),
    "dask-probe-any-length": ("emu/drive/shards.py", 'struct.unpack("<Q", head)[0] > MAX_HANDSHAKE',
                              'struct.unpack("<Q", head)[0] > 1 << 64', [R5 + "test_an_executor_that_is_not_a_dask_scheduler"]),
    "results-any-json": ("emu/drive/shards.py", "                if not isinstance(rec, dict):", "                if False:",
                         [R5 + "test_bad_input[results file holding a JSON list]"]),
    "fifo-silence-is-eof": ("emu/core/errors.py", "            if not waiter.poll(PIPE_WAIT_S * 1000):\n                return None",
                            "            if not waiter.poll(PIPE_WAIT_S * 1000):\n                break",
                            [R5 + "test_a_fifo_nobody_writes_to_is_a_bounded_error"]),
    "toml-recursion-uncaught": ("emu/drive/tomlfile.py", "    except RecursionError:", "    except ZeroDivisionError:",
                                [R5 + "test_bad_input[TOML array 5,000 deep: run]"]),
    "inlined-never-found": ("emu/front/godwarf.py", 'and "DW_AT_low_pc" not in die.attributes',
                            'and "DW_AT_low_pc" in die.attributes', [R5 + "test_bad_input[an inlined function]"]),
    "any-test-exists": ("emu/drive/realsweep.py", '    if any(f"{pkg}.{top}" in symbols for pkg in pkgs):', "    if True:",
                        ["tests/test_gotest_sweep.py::test_bad_test_input_is_exit_2_with_what_happened"]),
    "elfclass-ignored": ("emu/front/elfheaders.py", "        if self.elfclass != 64:", "        if False:",
                         [R5 + "test_bad_input[ELFCLASS32 header: exec]"]),
    "non-go-dynamic-told-to-rebuild": ("emu/linux/elfimage.py", "and elf.section(GO_BUILDINFO) is None and interp:",
                                       "and False:", [R5 + "test_bad_input[/bin/ls: exec]"]),
    "stripped-accepted": ("emu/linux/elfimage.py", "        if symtab is None:              #", "        if False:              #",
                          [R5 + "test_bad_input[a stripped Go binary: sweep]"]),
    "build-key-ignores-test": ("emu/front/gobuild.py",
                               '                        + ([] if module is not None else ["go test -c" if test else "go build"])',
                               "                        + []",
                               [R5 + "test_a_packages_program_build_never_gets_its_test_binary_from_the_cache"]),
    "no-tests-hint": ("emu/front/gobuild.py", '"with func main)" + _tests_hint(src))', '"with func main)")',
                      [R5 + "test_bad_input[a package with tests given to exec]"]),
    "max-insns-tenfold": ("emu/front/asmfront.py", "    if count > MAX_INSNS:", "    if count > MAX_INSNS * 10:",
                          [R5 + "test_a_huge_assembly_file_is_refused_before_keystone_takes_gigabytes"]),
    "scenario-key-wins": ("emu/cli/execute.py", "            if not _given(a, k):", "            if True:",
                          [R5 + "test_command_line_options_win_over_an_exec_scenarios_keys"]),
    "directory-read-as-asm": ("emu/drive/loader.py", "    if os.path.isdir(path):", "    if False:",
                              [R5 + "test_bad_input[a directory without Go files]"]),
    "unset-registers-no-hint": ("emu/drive/sweeper.py", "    if world.given_regs:", "    if True:",
                                [R5 + "test_bad_input[a loop swept without --reg]"]),
    "pattern-fail-zero-of-n": ("emu/output/many_report.py", 'swept function(s) failed"] if bad else [])',
                               'swept function(s) failed"] if True else [])',
                               [R5 + "test_a_pattern_sweep_whose_only_failures_are_functions_not_swept_says_so"]),
    "tail-unbounded": ("emu/drive/gsweep.py", "self._finish(clock, TAIL_BUDGETS * budget)", "self._finish(clock)",
                       [R5 + "test_bad_input[a test that spins after F returns]"]),
}


# --- third part (2026-12-08): the AVX executor of --cpu v3/v4 (hostexec, hostcpu, avxexec, avxmem) -------------
A = "tests/test_avx.py::"
S = "tests/test_avx_state.py::"
X = "tests/test_cpu_exact.py::"
STORE_RO = S + "test_a_store_over_a_read_only_page_faults_on_the_instruction_with_nothing_written"
MUTATIONS.update({
    "avx-upper-not-zeroed": ("emu/engine/hostexec.py", "    for off in p.upper:", "    for off in ():",
                             [A + "test_vex_three_operand_and_upper_zeroing"]),
    "avx-upper-of-every-vector": ("emu/engine/hostexec.py",
                                  "        out = {int(v.group(1)) for v in map(_VEC.match, (insn.reg_name(r) for r in written)) if v}",
                                  "        out = set(vecs)", [A + "test_vex_three_operand_and_upper_zeroing"]),
    "avx-flags-not-back": ("emu/engine/hostexec.py", "    if (out ^ flags) & hostcpu.ARITH:", "    if False:",
                           [A + "test_bytealg_instructions"]),
    "avx-mxcsr-not-back": ("emu/engine/hostexec.py", '    if int.from_bytes(mm[_M:_M + 4], "little") != mx:',
                           "    if False:", [X + "test_instruction_matches_the_host"]),
    "avx-partial-all-bytes": ("emu/engine/hostexec.py", "        if zeros[i] != 0 or ones[i] != 0xFF:",
                              "        if True:", [X + "test_instruction_matches_the_host"]),
    "avx-sib-disp32-kept": ("emu/engine/hostexec.py", "        if mod == 0 and sib & 7 == 5:\n            end += 4",
                            "        if mod == 0 and sib & 7 == 5:\n            end += 0", [A + "test_a_host_executed_operand_is_read_from_its_address"]),
    "avx-index-ignored": ("emu/engine/hostexec.py",
                          '        a += int.from_bytes(mm[hostcpu.GPR + 8 * index:hostcpu.GPR + 8 * index + 8], "little") * scale',
                          "        a += 0", [X + "test_instruction_matches_the_host"]),
    "avx-vex-xb-kept": ("emu/engine/hostexec.py", "        out[at + 1] |= 0x60", "        out[at + 1] |= 0x00",
                        [X + "test_instruction_matches_the_host"]),
    "avx-hook-whole-access": ("emu/engine/avxmem.py", "_PIECE = 8 ", "_PIECE = 64 ",
                              [X + "test_a_store_is_hooked_as_a_write_only_and_a_load_as_a_read_only"]),
    "avx-write-before-check": ("emu/engine/avxmem.py",
                               "        for a, data in parts:\n            self.check_write(a, len(data))\n",
                               "", [S + "test_a_vector_store_to_a_read_only_page_faults_before_writing_anything"]),
    "avx-mov-unaligned-ok": ("emu/engine/avxexec.py", "and ex.address(d, mem) % n:", "and False:",
                             [X + "test_a_misaligned_vmovdqa_is_refused_as_the_cpus_gp_and_an_aligned_one_runs"]),
    "avx-mov-merge-zeroes": ("emu/engine/avxexec.py", "    old = 0 if d.zeroing else ex.get(d, dst, n)",
                             "    old = 0", [X + "test_masked_and_zeroing_evex_match_the_host"]),
    "avx-vzeroupper-keeps": ("emu/engine/avxexec.py", "ex.vf.set_zmm(i, ex.vf.zmm(i) & ((1 << 128) - 1))",
                             "ex.vf.set_zmm(i, ex.vf.zmm(i))", [A + "test_ymm_load_store_and_vzeroupper"]),
    "avx-xcr0-ignored": ("emu/engine/hostcpu.py", "    if xcr0 & 0xE6 == 0xE6 and c1 >> 27 & 1:",
                         "    if c1 >> 27 & 1:", [X + "test_an_avx_feature_counts_only_with_the_xcr0_state_the_os_enabled"]),
})


def main(names: list[str]) -> int:
    chosen = {n: MUTATIONS[n] for n in (names or MUTATIONS)}
    print(f"applying {len(chosen)} mutation(s) of this round's code")
    ok = [run(n, spec) for n, spec in chosen.items()]
    print(f"{sum(ok)}/{len(ok)} killed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
