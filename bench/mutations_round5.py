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
"""
from __future__ import annotations

import sys

from mutations import run

M = "tests/test_memory_limit.py::"
C = "tests/test_ctrl_c.py::"

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
    "tmp-unlink-keeps-charge": ("emu/linux/tmpfs.py", "        self._drop(node)\n        del self.nodes[path]",
                                "        del self.nodes[path]",
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
}


def main(names: list[str]) -> int:
    chosen = {n: MUTATIONS[n] for n in (names or MUTATIONS)}
    print(f"applying {len(chosen)} mutation(s) of this round's code")
    ok = [run(n, spec) for n, spec in chosen.items()]
    print(f"{sum(ok)}/{len(ok)} killed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
