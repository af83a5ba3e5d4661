"""Mutation check (not a test): re-apply the semantic mutations of emu/ that once survived the whole
suite (issue #13) and show that each one now makes the suite fail.

Each mutation is a textual patch applied to a copy of the repository in a temporary directory (the
checkout is never touched); the tests that should kill it run there. Run with
`.venv/bin/python bench/mutations.py [NAME ...]`; exit 0 when every mutation is killed.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KILLERS = ["tests/test_bites.py"]
S40 = "tests/test_survivors.py::"   # issue #40's killers: one test each, by its node id
C37 = "tests/test_cpus.py::"        # issue #37 item 2's: the scheduler's rules
P37 = "tests/test_procs.py::"       # issue #37 item 3's (processes)
A46 = "tests/test_avx_state.py::"   # issue #46 item 3's (CPU levels)
S47 = "tests/test_schedules.py::"   # issue #47's: each decision a PCT schedule makes
X47 = "tests/test_explain_schedule.py::"   # issue #47's explain --schedule: each rule of the story
W47 = "tests/test_sweep_schedules.py::"     # issue #47's sweep --schedules: each rule of gschedules.py
E48 = "tests/test_cpu_exact.py::"    # issue #48's (instructions executed on the host)
TIMEOUT = 900               # seconds for one mutant's tests: a mutant that hangs them is killed too

#: name -> (file, old text, new text, tests to run)
MUTATIONS = {
    "schedule-findings-dropped": ("emu/drive/realsweep.py", "    log.extend(schedule_findings(sw, ref, spec.test[1] if spec.test and spec.test[0] == \"test\" else None))\n", "",
                                  ["tests/test_concurrent_verdicts.py"]),
    # issue #46 item 2: a --gc reference that hits a GC bug is a finding, never a legitimate run
    "gc-reference-evidence-ignored": ("emu/drive/references.py", "    if other.gc_evidence is not None:\n",
                                      "    if False:\n",
                                      ["tests/test_gc_verdicts.py::test_a_gc_reference_that_hits_the_bug_is_a_finding_and_the_result_still_compared"]),
    "gc-unasked-raises": ("emu/drive/grequest.py", "                gc.unasked += 1\n",
                          "                raise EmuError('never asked')\n", ["tests/test_gc_verdicts.py"]),
    # issue #46 item 1: what other goroutines wrote during a held reference is compared at the program's end only
    "held-shared-not-collected": ("emu/drive/references.py", '    u.shared |= set(getattr(other, "shared", ()))\n', "",
                                  ["tests/test_concurrent_verdicts.py"]),
    # issue #23: survivors of an independent mutation run, each killed by tests/test_survivors.py
    "signals-in-arrival-order": ("emu/linux/threads.py", "for sig in sorted(self.pending):", "for sig in self.pending:",
                                 ["tests/test_survivors.py"]),
    "refusals-of-last-shard": ("emu/drive/sweeper.py", "        refused.update(r.refused)", "        refused = Counter(r.refused)",
                               ["tests/test_survivors.py"]),
    "results-key-without-options": ("emu/drive/shards.py", "astuple(spec), astuple(opts), ref.boundaries",
                                    "astuple(spec), ref.boundaries", ["tests/test_survivors.py"]),
    "resume-check-skips-rbp": ("emu/check/verify.py", '        if r.kind == "sp":', '        if r.kind == "sp" or r.name == "RBP":',
                               ["tests/test_survivors.py"]),
    "real-resume-x0-x7-only": ("emu/goruntime/watch.py", "            for i in range(len(XMM)):",
                               "            for i in range(8):", ["tests/test_survivors.py"]),
    "inline-index-0-ignored": ("emu/front/gofront.py", "        inline = tree[k].name if 0 <= k < len(tree) else None",
                               "        inline = tree[k].name if 0 < k < len(tree) else None", ["tests/test_survivors.py"]),
    "futex-timeout-absolute": ("emu/linux/sys_time.py", "deadline = p.now() + timespec_ns(p, timeout) if timeout else None",
                               "deadline = timespec_ns(p, timeout) if timeout else None", ["tests/test_survivors.py"]),
    "verify-low-32-bits": ("emu/check/verify.py", "        b, a = before.values[r.name], after.values[r.name]\n",
                           "        b, a = before.values[r.name], after.values[r.name]\n"
                           "        if r.kind == 'gp':\n            b, a = b & 0xFFFFFFFF, a & 0xFFFFFFFF\n", KILLERS),
    "no-resume-pc-check": ("emu/drive/sweeper.py", "                    if ret_to != pc:", "                    if False:", KILLERS),
    "final-memory-unchecked": ("emu/drive/sweeper.py", "    for a, data in ref.final_memory:", "    for a, data in []:",
                               KILLERS),
    "clobber-xmm-low-64": ("emu/drive/sweeper.py", "(rnd.getrandbits(8 * r.size) | 1)",
                           "((rnd.getrandbits(8 * r.size) & (2**64 - 1)) | 1)", KILLERS),
    "clobber-keeps-df": ("emu/drive/sweeper.py", 'masks["RFLAGS"] = regs.USER_FLAGS_MASK',
                         'masks["RFLAGS"] = regs.USER_FLAGS_MASK & ~0x400', KILLERS),
    "asyncpreempt2-keeps-rflags": ("emu/model/rtcode.py", """           f"push qword ptr {_abs(t + o['RFLAGS'])}", "popfq"]""",
                                   "           ]", KILLERS),
    "nested-acceptance-unreported": ("emu/drive/sweeper.py", "                if v.ok:\n                    return \"nested\"",
                                     "                if False:\n                    return \"nested\"", KILLERS),
    "asyncpreemptoff-acks": ("emu/check/inject.py", '        return Verdict(False, "asyncpreemptoff")',
                             '        ack()\n        return Verdict(False, "asyncpreemptoff")', KILLERS),
    "headroom-first": ("emu/check/safepoint.py", "    # 1. Only user Gs can have safe points",
                       "    if sp < st.stack_lo or sp - st.stack_lo < headroom:\n"
                       "        return Verdict(False, \"stack-headroom\")\n    # 1. Only user Gs can have safe points",
                       KILLERS),
    "mallocing-before-locks": ("emu/check/safepoint.py", "    if st.m_locks != 0:\n        return \"m-locks\"\n"
                               "    if st.m_mallocing != 0:\n        return \"m-mallocing\"\n",
                               "    if st.m_mallocing != 0:\n        return \"m-mallocing\"\n"
                               "    if st.m_locks != 0:\n        return \"m-locks\"\n", KILLERS),
    "callers-conservative": ("emu/model/gcscan.py", "        else:\n            todo += [(f\"frame {fr.func} (stack map)\"",
                             "        else:\n            todo.append(('caller', fr.sp, fr.sp + fr.size))\n"
                             "            todo += [(f\"frame {fr.func} (stack map)\"", KILLERS),
    "any-violation-diagnosed": ("emu/drive/checkstub.py", "bool(viol), mu.expect <= named,", "bool(viol), bool(viol),",
                                KILLERS),
    "caught-or-diagnosed-killed": ("emu/drive/checkstub.py", "return self.caught and self.diagnosed",
                                   "return self.caught or self.diagnosed", KILLERS),
    "sysmon-when-never-reset": ("emu/model/sysmon.py", "p.sysmon_tick, p.sysmon_when = p.schedtick, t",
                                "p.sysmon_tick = p.schedtick", KILLERS),
    "no-runnext-on-ready": ("emu/model/sched.py", "            self._runqput(into, g, True)",
                            "            self._runqput(into, g, False)", KILLERS),
    "no-global-queue-poll": ("emu/model/sched.py", "if p.schedtick % GLOBAL_QUEUE_EVERY == 0 and self.global_q:",
                             "if False:", KILLERS),
    # the counted stub run (issue #11): a run that stops anywhere but the sentinel / the RET must go on
    # with the hooks, or a stub whose path depends on the point is misjudged
    "counted-stub-trusts-its-stop": ("emu/drive/sweeper.py",
                                     "            if reason == STOP_COUNT and at.rip in m.stub_ret_set:",
                                     "            if reason == STOP_COUNT:", ["tests/test_sweep.py"]),
    "counted-stub-no-fallback": ("emu/drive/sweeper.py", "        return m.run(m.pc, left), None",
                                 "        return reason, None", ["tests/test_sweep.py"]),
    # the chained runs (model/chainrun.py): an M switch's deferred FS_BASE must reach the CPU, and the
    # native clobber must cover the whole dump record (XMM registers included)
    "chained-run-drops-deferred-fs": ("emu/model/chainrun.py", "        fs = self._fs_pending\n",
                                      "        fs = None\n", ["tests/test_chainrun.py", "tests/test_sweep.py"]),
    # a snapshot puts regions back onto the host memory they had: a range mapped again since has new memory
    "snapshot-keeps-a-remapped-region": ("emu/linux/snapshot.py",
                                         "        if r in want and want[r] == _host_of(now_layout, r[0], r[1]):",
                                         "        if r in want:", ["tests/test_linux_parts.py"]),
    # the real heap's allocated slots: allocBits as of the last sweep, and every slot below freeindex since
    "realgc-heap-ignores-freeindex": ("emu/goruntime/heapspans.py", "return (alloc_bits | ((1 << freeindex) - 1)) & ((1 << nelems) - 1)",
                                      "return alloc_bits & ((1 << nelems) - 1)", ["tests/test_gexplain.py"]),
    "realgc-span-setup-is-a-use": ("emu/goruntime/freeduse.py", "        return name in SPAN_SETUP",
                                   "        return False",
                                   ["tests/test_gc_verdicts.py::test_the_runtime_setting_up_a_reused_span_is_not_a_use_after_free"]),
    "realgc-over-read-is-a-use": ("emu/goruntime/freeduse.py", "return bool(ends) and all(a < start or b > start + size for a, b in ends)",
                                  "return False",
                                  ["tests/test_realgc.py::test_a_vector_load_that_only_runs_into_a_freed_object_is_not_a_use"]),
    "realsweep-a-failing-test-is-not-a-finding": ("emu/drive/findings.py",
                                                  "if test and not out and e is not None and e.exit_code not in (0, None):",
                                                  "if False:",
                                                  ["tests/test_concurrent_verdicts.py::test_a_test_that_fails_in_every_legitimate_run_is_a_finding_of_its_own"]),
    "quarantine-marks-nothing": ("emu/goruntime/quarantine.py", "            self._mark(s, i)\n        return freed",
                                 "        return freed",
                                 ["tests/test_gc_verdicts.py::test_a_stale_pointer_read_after_the_slot_would_be_reused_is_a_use_after_free"]),
    "quarantine-not-kept-across-cycles": ("emu/goruntime/quarantine.py", "                self._mark(slot[0], slot[1])", "                pass",
                                          ["tests/test_gc_verdicts.py::test_correct_code_is_clean_under_the_concurrent_gc"]),
    "quarantine-survives-the-snapshot": ("emu/goruntime/realgc.py", "            self.quarantine = Quarantine(self.spans, self.quarantine.limit)",
                                         "            pass",
                                         ["tests/test_gc_verdicts.py::test_correct_code_is_clean_under_the_concurrent_gc"]),
    "gc-sync-points-vacuous": ("emu/drive/realsweep.py",
                               "return self.points > 0 and self.injected == 0 and not synced and self.violation_count == 0",
                               "return self.points > 0 and self.injected == 0 and self.violation_count == 0",
                               ["tests/test_realgc_sync.py::test_sync_points_alone_are_not_vacuous_and_say_what_they_checked"]),
    "gc-wait-past-the-return": ("emu/drive/grequest.py", "            if clock.ready is None and self.returned is not None:\n                return first",
                                "            if False:\n                return first",
                                ["tests/test_gc_verdicts.py::test_a_point_past_the_functions_end_in_a_shorter_run_is_not_an_error"]),
    "realgc-heap-bitmap-off-by-one": ("emu/goruntime/heapspans.py", 'bits = int.from_bytes(buf[ab - base:ab - base + nb], "little")',
                                      'bits = int.from_bytes(buf[ab - base + 1:ab - base + 1 + nb], "little")',
                                      ["tests/test_realgc.py"]),
    "native-clobber-half-the-record": ("emu/model/chainrun.py", "dump.SIZE // 8])", "dump.SIZE // 16])",
                                       ["tests/test_chainrun.py"]),
    # the heap watch is on only while the heap holds objects: it must still come on at the first allocation
    "heap-watch-never-on": ("emu/model/gcworld.py", "self.machine.heap_watch(self.heap.next > self.heap.base)",
                            "self.machine.heap_watch(False)", ["tests/test_gc.py"]),
    # a fault's signal is taken at once, whatever --signal-at says
    "fault-signal-waits-for-signal-at": ("emu/linux/process.py",
                                         "forced = next((n for n, ev in t.pending.items() if ev.forced), 0)",
                                         "forced = 0", ["tests/test_linux_exec.py"]),
    # a blocked or ignored fault signal is forced: SIG_DFL and unblocked
    "blocked-fault-not-forced": ("emu/linux/sigdeliver.py", "        if t.sigmask & bit or handler == SIG_IGN:",
                                 "        if False:", ["tests/test_linux_exec.py"]),
    # the slice runtime: capacities as the real runtime's, element arrays scanned through their type
    "roundupsize-without-malloc-header": ("emu/model/goslice.py", "                req += MALLOC_HEADER_SIZE",
                                          "                pass", ["tests/test_goslice.py"]),
    "slice-array-scanned-as-noscan": ("emu/model/goslice.py", "        return self.alloc(self.calling, size, t)",
                                      "        return self.alloc(self.calling, size, None)", ["tests/test_goslice.py"]),
    # runtime.rand per M (the real one, zero-seeded): a goroutine resumed on the other M takes another path
    "rand-per-m": ("emu/core/memmap.py", '"moveSliceNoCapNoScan", "rand"))}', '"moveSliceNoCapNoScan"))}',
                   ["tests/test_gomaps.py"]),
    # runtime.stringType & co. as runtime.init sets them: else convTstring's box is pointer-free
    "runtime-init-not-replayed": ("emu/front/gofront.py", "    for var, eface in RUNTIME_INIT:",
                                  "    for var, eface in ():", ["tests/test_goifaces.py"]),
    # hashkey as AlgInit sets it: left zero, keys whose first word is 0 all collide
    "hash-key-left-zero": ("emu/front/gofront.py", "        patches.append((hashkey[0], HASH_KEY))", "        pass",
                           ["tests/test_gomaps.py"]),
    # a caller frame's stack objects are scanned once something points into them
    "no-stack-objects": ("emu/model/gcscan.py", "            objects += frame_stack_objects(prog, fr)", "            pass",
                         ["tests/test_gomaps.py"]),
    # copystack adjusts the pointer slots of a Go binary's frames, as adjustframe does
    "copystack-no-pointer-slots": ("emu/model/stack.py",
                                   '    slots = pointer_slots(binary, m.read_u64, m.reg("RSP")) if binary is not None else []',
                                   "    slots = []", ["tests/test_gostack.py"]),
    # adjustctxt: a closure's context register moves with the stack
    "copystack-no-adjustctxt": ("emu/model/stack.py", "    if lo <= ctxt < hi:", "    if False:", ["tests/test_gostack.py"]),
    # a stack object found conservatively is still looked at only through its pointer mask
    "stack-object-all-words": ("emu/model/gcscan.py", "        for i in ptr_words:", "        for i in (range(n) if cons else ptr_words):",
                               ["tests/test_gomaps.py"]),
    # a --gc sweep's shards each free what the chain before them freed: counted once
    "gc-freed-summed-over-shards": ("emu/drive/sweeper.py", "sorted(set().union(*(g.freed_objects for g in parts))))",
                                    "[b for g in parts for b in g.freed_objects])", ["tests/test_shards.py"]),
    # issue #35: the comparison rules of the real-program sweep
    "references-primary-only": ("emu/drive/references.py", "REFERENCES = 3\n", "REFERENCES = 1\n",
                                ["tests/test_references.py"]),
    "references-confirm-never-drops": ("emu/drive/findings.py", "    log.drop(lambda v:", "    (lambda *a: None)(lambda v:",
                                       ["tests/test_references.py"]),
    "references-unstable-lines-compared": ("emu/drive/references.py", "            if x != y and i not in skip:",
                                           "            if x != y:", ["tests/test_references.py"]),
    "reseed-skips-chacha8": ("emu/goruntime/rngstate.py", "                _chacha8(p, m + off, rng)", "                pass",
                             ["tests/test_references.py"]),
    "heap-pointer-not-followed": ("emu/goruntime/heapgraph.py", "        self.emit(path, f\"&{e.name}\")\n        inline =",
                                  "        self.emit(path, f\"&{e.name}\")\n        return\n        inline =",
                                  ["tests/test_references.py", "tests/test_heapgraph.py"]),
    "heap-map-entries-in-slot-order": ("emu/goruntime/heapgraph.py", "        entries.sort(key=lambda x: (x[0], x[1]))\n",
                                       "", ["tests/test_heapgraph.py"]),
    "heap-aliasing-unrecorded": ("emu/goruntime/heapgraph.py", "        self.seen[key] = path\n", "",
                                 ["tests/test_heapgraph.py"]),
    "stub-path-not-checked": ("emu/goruntime/watch.py",
                              '        rec.path = "descheduled" if rec.descheduled else "not-descheduled" if rec.entered else',
                              '        rec.path = "descheduled" if True else "not-descheduled" if rec.entered else',
                              ["tests/test_verdicts.py"]),
    "crash-not-described": ("emu/goruntime/crashtext.py", "    c = describe(ending)\n    if c is None:",
                            "    c = None\n    if c is None:", ["tests/test_verdicts.py"]),
    # issue #37: page protections
    "mprotect-ignores-prot-write": ("emu/linux/memory.py", "executable=bool(prot & PROT_EXEC),\n"
                                    "                                  writable=bool(prot & PROT_WRITE))\n        return 0",
                                    "executable=bool(prot & PROT_EXEC),\n"
                                    "                                  writable=True)\n        return 0",
                                    ["tests/test_protections.py"]),
    "elf-segments-all-writable": ("emu/linux/process.py", "writable=bool(s.flags & PF_W))", "writable=True)",
                                  ["tests/test_protections.py"]),
    "write-fault-not-a-signal": ("emu/linux/sigdeliver.py", "        elif e.errno == UCC.UC_ERR_WRITE_PROT:",
                                 "        elif False:", ["tests/test_protections.py"]),
    "memory-limit-ignored": ("emu/linux/memory.py",
                             "        if self.cgroup.can_charge(sum(e - s for s, e in self.mapped.gaps(a, b))):",
                             "        if True:", ["tests/test_memory_limit.py"]),
    "kill-as-tkill": ("emu/linux/sys_signal.py", "p.signal_target(sig).tid, sig, SI_USER)", "p.signal_target(sig).tid, sig)",
                      ["tests/test_protections.py"]),
    "prctl-set-forgotten": ("emu/linux/sys_proc.py", "        p.prctl[option] = arg2\n", "",
                            ["tests/test_protections.py"]),
    "cpu-timer-never-fires": ("emu/linux/sys_timer.py", "            if timer.remaining > 0:\n                continue",
                              "            if True:\n                continue", ["tests/test_timers.py"]),
    "udp-refusal-ignored": ("emu/linux/sys_socket.py", "            s.error = ECONNREFUSED\n", "",
                            ["tests/test_etc.py"]),
    "no-default-etc": ("emu/linux/mounts.py", "            mine.append(etc_mount())\n", "", ["tests/test_etc.py"]),
    "start-up-calls-counted": ("emu/drive/gsweep.py", "        if self._readiness():\n            return True",
                               "        if True:\n            return True", ["tests/test_sweep_inputs.py"]),
    # issue #40: survivors of the fourth independent mutation run (66 mutations), each killed by a named test
    "sig-unblock-inverted": ("emu/linux/sys_signal.py", "            t.sigmask &= ~m", "            t.sigmask &= m",
                             [S40 + "test_sig_unblock_clears_only_the_signals_named"]),
    "futex-wake-one-too-many": ("emu/linux/scheduling.py", "            if woken >= n:", "            if woken > n:",
                                [S40 + "test_futex_wake_wakes_at_most_the_number_asked"]),
    "write-without-reader-succeeds": ("emu/linux/fds.py",
                                      "    if not st.readers or not st.writers:\n        send_sigpipe(p, p.cur, sigpipe)",
                                      "    if False:\n        send_sigpipe(p, p.cur, sigpipe)",
                                      [S40 + "test_a_write_no_one_reads_is_epipe_and_sigpipe",
                                       S40 + "test_a_program_gets_sigpipe_as_natively"]),
    "epipe-without-sigpipe": ("emu/linux/fds.py", "        p.send_signal(t, t.tid, SIGPIPE, SI_USER)",
                              "        pass", [S40 + "test_a_write_no_one_reads_is_epipe_and_sigpipe",
                                                     S40 + "test_a_program_gets_sigpipe_as_natively"]),
    "datagram-at-full-length": ("emu/linux/sys_socket.py",
                                "return len(data) if flags & MSG_TRUNC else min(n, len(data))", "return len(data)",
                                [S40 + "test_a_datagram_longer_than_the_buffer_is_cut_to_it_unless_msg_trunc"]),
    "mount-a-string-prefix": ("emu/linux/mounts.py", 'return path == root or path.startswith(root.rstrip("/") + "/")',
                              "return path.startswith(root)", ["tests/test_containment.py"]),
    "mount-link-followed-out": ("emu/linux/mounts.py", "                return (m, host) if within(host, m.host) else None",
                                "                return (m, host)", ["tests/test_containment.py"]),
    "tmp-o-append-ignored": ("emu/linux/tmpfs.py", "        if self.flags & O_APPEND:\n            self.pos = len(d)\n", "",
                             [S40 + "test_o_append_writes_at_the_end_in_tmp"]),
    "real-refusals-of-last-shard": ("emu/drive/realsweep.py", "    out.refused.update(more.refused)",
                                    "    out.refused = Counter(more.refused)",
                                    [S40 + "test_sharded_refusal_counts_of_a_real_program_sweep_add_up"]),
    "f-return-of-a-deeper-invocation": ("emu/drive/gsweep.py",
                                        "        if self._stack_hi() - read_reg(uc, X.UC_X86_REG_RSP) != self.entry_depth - 8:",
                                        "        if False:", [S40 + "test_fs_return_is_its_own_invocations_not_a_deeper_ones"]),
    "ending-ignores-stderr": ("emu/drive/references.py", '    for what in ("stdout", "stderr"):\n        xa, xb',
                              '    for what in ("stdout",):\n        xa, xb',
                              [S40 + "test_an_ending_that_differs_only_on_stderr_differs"]),
    "faulting-load-not-counted": ("emu/linux/icount.py", "(1 if faulted or self._stop_count_current else 0)",
                                  "(1 if self._stop_count_current else 0)",
                                  [S40 + "test_the_counter_counts_a_faulting_load_as_executed"]),
    # Linux's signal behaviour the runtime never exercises (it installs every handler with SA_RESTART and
    # without SA_NODEFER), as unit tests of the kernel model
    "sa-restart-always": ("emu/linux/sigdeliver.py", "        if t.wait.restart and flags & SA_RESTART and t.wait.nr >= 0:",
                          "        if t.wait.restart and t.wait.nr >= 0:",
                          [S40 + "test_without_sa_restart_an_interrupted_read_fails_with_eintr"]),
    "sa-nodefer-ignored": ("emu/linux/sigdeliver.py", "(0 if flags & SA_NODEFER else 1 << (sig - 1))", "(1 << (sig - 1))",
                           [S40 + "test_a_handler_runs_with_its_signal_blocked_unless_sa_nodefer"]),
    "blocked-signal-interrupts-a-wait": ("emu/linux/sigdeliver.py",
                                         "        elif t.state == BLOCKED and not t.sigmask & (1 << (sig - 1)):",
                                         "        elif t.state == BLOCKED:",
                                         [S40 + "test_a_signal_the_waiting_thread_blocks_leaves_it_waiting_until_unblocked"]),
    # issue #36 (round 4): the GC at calls, the GC references, the stale-word survivors
    "gc-sync-never-arms": ("emu/drive/gsync.py", "        self.armed = (addr, target)\n", "        return\n",
                           ["tests/test_realgc_sync.py::test_every_frame_is_precise_at_a_call_and_newstack_parks_the_goroutine"]),
    "gc-concurrent-sync-runs-on": ("emu/drive/grequest.py", "            self._wait_out_cycle(clock, cycles)            #",
                                   "            pass                                             #",
                                   ["tests/test_realgc_sync.py::test_a_slice_rebuilt_from_its_uintptr_is_a_use_after_free_with_every_release"]),
    "gc-no-gc-references": ("emu/drive/references.py", "GC_REFERENCES = 2", "GC_REFERENCES = 0",
                            ["tests/test_realgc_sync.py::test_what_a_cycle_changes_without_a_bug_is_not_compared"]),
    "gc-no-stale-words": ("emu/goruntime/realgc.py", "            self._conservative_words(frame, name)", "            pass",
                          ["tests/test_realgc_sync.py::test_a_stale_word_that_kept_an_object_is_named"]),
    # issue #37 item 2: the scheduler's N CPUs (emu/linux/cpus.py), one mutation per Linux rule
    "one-cpu-runs-everything": ("emu/linux/cpus.py", "        if len(clocks) == 1:\n            return 0",
                                "        if True:\n            return 0",
                                [C37 + "test_n_cpus_run_n_threads_in_the_same_stretch_of_virtual_time"]),
    "wakee-waits-for-the-wakers-quantum": ("emu/linux/cpus.py", "            return curr is not None", "            return False",
                                           [C37 + "test_lockosthread_template_thread_race_finishes_at_every_quantum",
                                            C37 + "test_a_wakee_with_an_idle_cpu_ends_the_wakers_slice_and_runs_from_the_wakeup"]),
    "no-wakeup-preemption": ("emu/linux/cpus.py",
                             "        if curr is not None and curr_vruntime - t.vruntime > self.wakeup_granularity:",
                             "        if False:",
                             [C37 + "test_without_an_idle_cpu_a_sleeper_preempts_only_a_runner_past_the_wakeup_granularity",
                              C37 + "test_on_one_cpu_the_wakee_preempts_its_waker"]),
    "no-sleeper-credit": ("emu/linux/cpus.py", "        t.vruntime = max(t.vruntime, self.min_vruntime - self.sleeper_credit)\n",
                          "", [C37 + "test_without_an_idle_cpu_a_sleeper_preempts_only_a_runner_past_the_wakeup_granularity"]),
    "run-queue-in-arrival-order": ("emu/linux/cpus.py", "    while i and runq[i - 1].ready_ns > t.ready_ns:",
                                   "    while False:",
                                   [C37 + "test_a_thread_queues_behind_those_runnable_no_later_and_ahead_of_later_ones"]),
    "deadlines-at-the-cpu-ahead": ("emu/linux/cpus.py", "return max(min(self.clocks), min(ready))",
                                   "return max(max(self.clocks), min(ready))",
                                   [C37 + "test_a_sleeper_is_not_timed_out_before_a_cpu_that_is_behind_has_run"]),
    "steered-wakee-placed-as-cfs": ("emu/linux/cpus.py", "        if self.steered:\n            runq.append(t)\n            return False\n",
                                    "", [C37 + "test_a_steered_process_takes_turns_on_one_cpu_with_woken_threads_at_the_back"]),
    "sweeps-on-n-cpus": ("emu/drive/gstart.py", "replace(opts, steered=True)", "replace(opts, steered=False)",
                         [C37 + "test_the_real_program_sweep_runs_steered",
                          "tests/test_realgc.py::test_every_injection_is_met_by_a_real_cycle_that_scans_the_goroutine_where_it_was_parked"]),
    "sched-yield-keeps-the-cpu": ("emu/linux/sys_proc.py", "def sys_sched_yield(p, t, *_):\n    p.yield_slice()\n",
                                  "def sys_sched_yield(p, t, *_):\n",
                                  [C37 + "test_a_yielding_thread_gives_up_its_cpu_to_a_thread_waiting_for_one"]),
    "no-slice-jitter": ("emu/linux/cpus.py", "        if not contended or quantum < JITTER or self.steered:", "        if True:",
                        [C37 + "test_the_seed_varies_where_slices_end_and_a_seed_repeats_exactly"]),
    # issue #37 item 3: other processes (emu/linux/proctable.py, sys_fork.py), one killer test each
    "proc-exit-status-unshifted": ("emu/linux/proctable.py", "    return None if p.exit_code is None else (p.exit_code & 0xFF) << 8",
                                   "    return None if p.exit_code is None else (p.exit_code & 0xFF)",
                                   [P37 + "test_wait4_status_word_of_an_exit_and_of_a_signal"]),
    "proc-wclone-ignored": ("emu/linux/proctable.py",
                            "                and ((r.exit_signal != SIGCHLD) == bool(options & WCLONE) or options & WALL)]",
                            "]", [P37 + "test_wclone_selects_children_whose_exit_signal_is_not_sigchld"]),
    "proc-wnowait-reaps": ("emu/linux/proctable.py", "        if not options & WNOWAIT:\n            r.state = REAPED",
                           "        if True:\n            r.state = REAPED",
                           [P37 + "test_waitid_siginfo_bytes_wnohang_zeroes_and_wnowait_keeps_the_zombie"]),
    "proc-killed-reported-as-exited": ("emu/linux/sys_fork.py", "p.write(infop, _siginfo(SIGCHLD, CLD_KILLED if sig else CLD_EXITED,",
                                       "p.write(infop, _siginfo(SIGCHLD, CLD_EXITED,",
                                       [P37 + "test_waitid_siginfo_bytes_wnohang_zeroes_and_wnowait_keeps_the_zombie"]),
    "proc-wnohang-leaves-siginfo": ("emu/linux/sys_fork.py", "            p.write(infop, _siginfo(0, 0, 0, 0, 0))", "            pass",
                                    [P37 + "test_waitid_siginfo_bytes_wnohang_zeroes_and_wnowait_keeps_the_zombie"]),
    "proc-no-autoreap": ("emu/linux/proctable.py", "(handler == SIG_IGN or flags & SA_NOCLDWAIT):", "False:",
                         [P37 + "test_the_parent_gets_sigchld_with_cld_exited_and_an_ignoring_parent_reaps_at_once"]),
    "proc-vfork-parent-runs-on": ("emu/linux/sys_fork.py", "    if vfork:\n        p.block(", "    if False:\n        p.block(",
                                  [P37 + "test_vfork_parent_waits_until_the_child_exits_and_then_gets_its_pid"]),
    "proc-vfork-wait-interruptible": ("emu/linux/sigdeliver.py", 'if t.wait.kind in ("vfork", "fifo"):',
                                      'if t.wait.kind in ("fifo",):',
                                      [P37 + "test_vfork_parent_waits_until_the_child_exits_and_then_gets_its_pid"]),
    "proc-pidfd-not-cloexec": ("emu/linux/sys_fork.py", "fd = p.fds.install(PidFd(rec), cloexec=True)",
                               "fd = p.fds.install(PidFd(rec), cloexec=False)",
                               [P37 + "test_clone_pidfd_is_close_on_exec_and_readable_once_the_child_ended"]),
    "proc-pidfd-settid-together": ("emu/linux/sys_fork.py", "if flags & CLONE_PIDFD and flags & (CLONE_DETACHED | CLONE_PARENT_SETTID):",
                                   "if flags & CLONE_PIDFD and flags & CLONE_DETACHED:", [P37 + "test_clone_flag_rules"]),
    "proc-zombie-refuses-signals": ("emu/linux/proctable.py", "        if sig == 0 or rec.state == ZOMBIE:\n            return 0",
                                    "        if sig == 0:\n            return 0",
                                    [P37 + "test_pidfd_open_and_send_signal_rules"]),
    "proc-pipe-eof-per-process": ("emu/linux/fds.py", "not any(o is obj for tab in self.tables for o in tab.fds.values())",
                                  "not any(o is obj for o in self.fds.values())",
                                  [P37 + "test_a_pipe_reads_end_of_file_only_when_every_process_closed_the_write_end"]),
    "proc-epoll-interest-dropped-by-another-process": ("emu/linux/fds.py", "for tab in self.tables if tab is not self):",
                                                       "for tab in []):",
                                                       [P37 + "test_an_epoll_interest_survives_a_close_in_another_process"]),
    "proc-exec-keeps-cloexec-fds": ("emu/linux/proctable.py", "        old.fds.close_on_exec()\n", "",
                                    [P37 + "test_execve_closes_close_on_exec_descriptors_and_resets_caught_signals"]),
    "proc-exec-keeps-handlers": ("emu/linux/proctable.py",
                                 "new.sigactions = {sig: act for sig, act in old.sigactions.items() if act[0] == SIG_IGN}",
                                 "new.sigactions = dict(old.sigactions)",
                                 [P37 + "test_execve_closes_close_on_exec_descriptors_and_resets_caught_signals"]),
    "proc-script-enoexec": ("emu/linux/sys_fork.py", "        return -ENOENT, (f\"a script", "        return -ENOEXEC, (f\"a script",
                            [P37 + "test_execve_of_what_preemu_cannot_run_fails_as_linux_would_with_a_note"]),
    "proc-dynamic-runs-as-static": ("emu/linux/sys_fork.py", "    if interp is not None:\n        return -ENOENT",
                                    "    if False:\n        return -ENOENT",
                                    [P37 + "test_execve_of_what_preemu_cannot_run_fails_as_linux_would_with_a_note"]),
    "proc-sigchld-not-sent": ("emu/linux/proctable.py", "        if rec.exit_signal and handler != SIG_IGN:",
                              "        if False:",
                              [P37 + "test_the_parent_gets_sigchld_with_cld_exited_and_an_ignoring_parent_reaps_at_once"]),
    "proc-setfd-ignored": ("emu/linux/sys_io.py", "        p.fds.set_cloexec(fd, bool(arg & FD_CLOEXEC))\n", "",
                           [P37 + "test_close_on_exec_is_per_descriptor"]),
    "proc-dup2-copies-cloexec": ("emu/linux/fds.py", "        self.fds[new] = obj\n        self.set_cloexec(new, cloexec)",
                                 "        self.fds[new] = obj\n        self.set_cloexec(new, old in self.cloexec)",
                                 [P37 + "test_close_on_exec_is_per_descriptor"]),
    "proc-argv0-not-exec-able": ("emu/linux/sys_fork.py", "    if p.exe_alias is not None and guest == p.exe_alias[0]:",
                                 "    if False:", [P37 + "test_a_program_that_runs_itself_reads_its_childs_output_and_exit_status_as_natively"]),
    "proc-wait-never-woken": ("emu/linux/proctable.py", "        self.wake_waiters(pp)\n", "",
                              [P37 + "test_a_blocked_wait_finishes_when_the_child_ends"]),
    # issue #39 item 2: --each-pc's block-speed stop (eachpc.py)
    "eachpc-blocks-decide-nothing": ("emu/drive/eachpc.py",
                                     "                if a not in decided and len(decided) < self.max_points:",
                                     "                if False:",
                                     ["tests/test_each_pc.py::test_each_pc_decides_the_pcs_of_its_own_run_and_catches_a_broken_stub"]),
    # issue #39 item 1: F's globals diffed with memcmp (regbatch.changed_pages) instead of bytes slices
    "globals-changed-pages-missed": ("emu/linux/regbatch.py",
                                     "            out += [off for off in range(c, c + m, page) if _memcmp(a + off, b + off, "
                                     "min(page, n - off))]", "            pass",
                                     ["tests/test_heapgraph.py::test_a_global_one_run_left_alone_compares_by_its_value_at_the_call",
                                      "tests/test_point_cost.py::test_changed_pages_finds_every_changed_page_and_only_those"]),
    # issue #46 item 3: --cpu v3/v4, what a resume is compared on (stubsaves.py) and the vector unit's memory
    # accesses (avxmem.py), one mutation per rule
    "stub-saves-the-whole-level": ("emu/goruntime/stubsaves.py", "    if code is not None:\n        return level.state",
                                   "    if True:\n        return level.state",
                                   [A46 + "test_a_default_build_at_its_level_sweeps_clean_on_what_its_stub_saves[v3]"]),
    "stub-dispatch-unread": ("emu/goruntime/stubsaves.py", "        if target - x86 in PATHS:", "        if False:",
                             [A46 + "test_the_compared_state_is_read_from_the_stubs_dispatch[v3]"]),
    "users-stub-judged-as-the-binarys": ("emu/goruntime/watch.py", "None if own else code)", "None)",
                                         [A46 + "test_a_users_stub_is_held_to_the_whole_level"]),
    "avx-store-ignores-protection": ("emu/engine/avxmem.py", "        for a, data in parts:\n            self.check_write(a, len(data))\n",
                                     "", [A46 + "test_avx_stores_and_loads_fault_as_natively[v3]"]),
    "avx-fault-not-a-sigsegv": ("emu/linux/sigdeliver.py",
                                "        if intno == X86_TRAP_PF and self.avx is not None and self.avx.fault is not None:",
                                "        if False:", [A46 + "test_avx_stores_and_loads_fault_as_natively[v3]"]),
    "masked-store-writes-every-element": ("emu/engine/avxexec.py", "    runs = _runs(ex.vf.k[d.mask], n, w)",
                                          "    runs = [(0, n)]",
                                          [A46 + "test_a_masked_store_touches_only_its_elements_and_faults_only_for_them"]),
    "avx-load-unhooked": ("emu/engine/avxmem.py", "        if self.hooks:\n            self._call(UC_MEM_READ, addr, data)\n",
                          "", [A46 + "test_an_avx_load_of_freed_memory_is_a_use_after_free"]),
    "gc-watch-misses-avx": ("emu/goruntime/realgc.py", "            if self.p.avx is not None:      # --cpu v3/v4",
                            "            if False:", [A46 + "test_an_avx_load_of_freed_memory_is_a_use_after_free"]),
    # issue #47: the decisions a PCT schedule (emu/linux/schedule.py) controls, each pinned by a test
    "pct-lowest-priority-runs": ("emu/linux/schedule.py", "            if best is None or pr > best:",
                                 "            if best is None or pr < best:",
                                 [S47 + "test_the_highest_priority_runnable_thread_runs_next"]),
    "pct-change-point-keeps-the-slice": ("emu/linux/schedule.py",
                                         "        p.counter.stop_here(False)                      # the slice ends",
                                         "        pass  # p.counter.stop_here(False)              # the slice ends",
                                         [S47 + "test_a_change_point_ends_the_slice_before_its_step_and_the_step_is_counted_once"]),
    "pct-stopped-step-counted-twice": ("emu/linux/schedule.py",
                                       "        st.steps = n - 1                                # it has not run",
                                       "        pass                                            # it has not run",
                                         [S47 + "test_a_change_point_ends_the_slice_before_its_step_and_the_step_is_counted_once"]),
    "pct-futex-wake-fifo": ("emu/linux/scheduling.py",
                            "            waiters = self.schedule.wake_order(waiters)",
                            "            waiters = list(waiters)",
                            [S47 + "test_futex_wake_releases_the_highest_priority_waiters_first"]),
    "pct-wakee-never-preempts": ("emu/linux/scheduling.py", "                    and self.schedule.preempts(t, curr):",
                                 "                    and False:",
                                 [S47 + "test_a_wakee_preempts_only_a_runner_of_lower_priority"]),
    "pct-demoted-for-good": ("emu/linux/schedule.py", "                if self.prio.get(tid) == saved[1]:",
                             "                if False:",
                             [S47 + "test_a_fairness_demotion_lasts_until_the_others_have_had_their_turn"]),
    "pct-no-fairness-bound": ("emu/linux/schedule.py", "        if ran >= self.fair_budget:", "        if False:",
                              [S47 + "test_the_fairness_bound_ends_a_spin_that_strict_priorities_livelock"]),
    # ... each change point's partner: drawn, and below the thread its change point stopped
    "pct-no-partners": ("emu/linux/schedule.py", "            if later not in self.change:",
                        "            if False:",
                        [S47 + "test_initial_priorities_are_above_every_change_point_and_the_labels_are_the_change_points",
                         S47 + "test_the_check_then_act_lock_fails_within_400_schedules_and_names_seed_decisions_and_replay"]),
    "pct-steps-in-type-algorithms": ("emu/linux/schedule.py", '    if name.startswith("type:"):', "    if False:",
                                     [S47 + "test_a_go_1_24_builds_type_algorithms_are_not_steps"]),
    "pct-partner-beyond-the-run": ("emu/linux/schedule.py",
                                   "            later = step + self.rng.randint(1, max(1, self.k - step))",
                                   "            later = step + self.rng.randint(1, self.k)",
                                   [S47 + "test_initial_priorities_are_above_every_change_point_and_the_labels_are_the_change_points"]),
    "pct-partner-above": ("emu/linux/schedule.py", "                self.change[later] = i - PARTNER_BELOW",
                          "                self.change[later] = i + PARTNER_BELOW",
                          [S47 + "test_the_check_then_act_lock_fails_within_400_schedules_and_names_seed_decisions_and_replay"]),
    # issue #47: explain --schedule SEED tells the replay's second run (the first calibrates k) ...
    "explain-schedule-tells-calibration-too": ("emu/teach/schedstory.py",
                                               "        p.on_slice = on_slice if calls[0] == 2 else None\n",
                                               "        p.on_slice = on_slice\n",
                                               [X47 + "test_the_story_is_the_run_exec_replays_and_its_slices_add_up"]),
    # ... a slice's steps are the steps counted since the previous slice ended
    "explain-schedule-steps-from-boot": ("emu/teach/schedstory.py",
                                         '        last["insns"], last["steps"] = p.insns, steps\n',
                                         '        last["insns"] = p.insns\n',
                                         [X47 + "test_the_story_is_the_run_exec_replays_and_its_slices_add_up"]),
    # ... its chapters are cut at the change points
    "explain-schedule-chapters-uncut": ("emu/teach/schedstory.py",
                                        '    cuts = [d["segment"] for d in decisions if d["kind"] == "change-point" '
                                        'and d["segment"] is not None]\n', "    cuts = []\n",
                                        [X47 + "test_the_chapters_are_cut_at_the_change_points"]),
    # ... a -trimpath build's module-path file names are found under the program's directory
    "explain-schedule-source-untrimmed": ("emu/teach/schedstory.py",
                                          "    for cand in [file] + [os.path.join(root, *parts[i:]) for i in "
                                          "range(len(parts))]:", "    for cand in [file]:",
                                          [X47 + "test_the_text_tells_the_decisions_with_their_source_lines_the_threads_and_the_failure"]),
    # ... a partner says whose partner it is
    "explain-schedule-partner-unnamed": ("emu/teach/schedstory.py", '    if d.get("partner_of") is not None:\n',
                                         "    if False:\n",
                                         [X47 + "test_the_text_tells_the_decisions_with_their_source_lines_the_threads_and_the_failure"]),
    # ... a failing run exits 1, as exec --schedule does
    "explain-schedule-exits-0": ("emu/cli/explain.py", "    code = 0 if story.ok else 1\n", "    code = 0\n",
                                 [X47 + "test_the_text_tells_the_decisions_with_their_source_lines_the_threads_and_the_failure"]),
    # ... and the page draws a change point on the lane of the thread it stopped
    "explain-schedule-page-markers-on-first-lane": (
        "emu/teach/schedhtml.py", "    const y = top + row[d.tid] * laneH;\n    const g = el('g'",
        "    const y = top;\n    const g = el('g'",
        ["tests/test_explain_browser.py::test_schedule_page_draws_a_lane_per_thread_and_walks_the_change_points"]),
    # issue #47 part 2: sweep --schedules runs the first chain with the schedule attached ...
    "sweep-schedules-never-attached": ("emu/drive/gschedules.py", "    s.attach(sw.p)\n", "    s.proc = sw.p\n",
                                       [W47 + "test_a_schedule_finds_the_lost_update_and_names_seed_change_point_and_replay"]),
    # ... judges each run's ending against the uninterrupted one's ...
    "sweep-schedules-ending-ignored": ("emu/drive/gschedules.py", "        why = ending_failure(ending, ref.ending)\n",
                                       "        why = None\n",
                                       [W47 + "test_a_schedule_finds_the_lost_update_and_names_seed_change_point_and_replay"]),
    # ... injects at the chain's points (G's, the sweep's) ...
    "sweep-schedules-no-injections": ("emu/drive/gschedules.py", "            _, reached, ending = sw.chain(points, {})\n",
                                      "            _, reached, ending = sw.chain((), {})\n",
                                      [W47 + "test_a_schedule_finds_the_lost_update_and_names_seed_change_point_and_replay"]),
    # ... and says whether the uninterrupted run fails under the failing schedule too
    "sweep-schedules-gc-chain-counted-open": ("emu/drive/gschedules.py",
                                              "len(points) if sw.gc is None else cal_reached)", "len(points))",
                                              [W47 + "test_under_gc_a_schedule_makes_the_runtime_find_the_node_a_move_without_write_barrier_hid"]),
    "sweep-schedules-uninterrupted-unjudged": ("emu/drive/gschedules.py",
                                               "            out.uninterrupted_fails = ending_failure(plain, ref.ending) "
                                               "is not None\n", "            out.uninterrupted_fails = False\n",
                                               [W47 + "test_a_schedule_finds_the_lost_update_and_names_seed_change_point_and_replay",
                                                W47 + "test_a_schedule_whose_uninterrupted_run_fails_too_is_called_a_race_among_the_threads"]),
    # issue #48: the vector unit runs instructions on the host (hostexec.py), one mutation per rule
    "bzhi-left-to-unicorn": ("emu/engine/avx.py", 'BMI_WRONG = frozenset(("bzhi", ', 'BMI_WRONG = frozenset((',
                             [E48 + "test_bzhi_index_64_keeps_the_source_and_sets_cf"]),
    "host-store-not-written-back": ("emu/engine/hostexec.py",
                                    "    if p.mem is not None and (p.write or mm[0:p.size] != before):",
                                    "    if False:", [E48 + "test_instruction_matches_the_host"]),
    "host-flags-dropped": ("emu/engine/hostexec.py", "    if (out ^ flags) & hostcpu.ARITH:", "    if False:",
                           [E48 + "test_instruction_matches_the_host"]),
    "host-mxcsr-dropped": ("emu/engine/hostexec.py", '    if int.from_bytes(mm[_M:_M + 4], "little") != mx:',
                           "    if False:", [E48 + "test_scalar_fma_special_values_as_the_host"]),
    "broadcast-reads-the-vector": ("emu/engine/hostexec.py", "    p.size = m.size\n", "    p.size = 64\n",
                                   [E48 + "test_the_broadcast_is_a_4_byte_access_through_avxmem"]),
    "guest-level-unchecked": ("emu/engine/hostexec.py", "    missing = need - guest\n", "    missing = set()\n",
                              ["tests/test_avx.py::test_unsupported_and_above_level_name_pc_instruction_and_level"]),
    "misaligned-vmovdqa-runs": ("emu/engine/hostexec.py", "        if p.align and addr % p.align:", "        if False:",
                                [E48 + "test_a_misaligned_vmovdqa_is_refused_as_the_cpus_gp_and_an_aligned_one_runs"]),
    "host-features-unchecked": ("emu/engine/hostexec.py", "    lacking = need - host.features\n",
                                "    lacking = set()\n",
                                [E48 + "test_an_instruction_the_host_lacks_is_refused_naming_the_feature"]),
    "pcmpistrm-xmm0-not-moved": ("emu/engine/hostexec.py", "        vecs.add(0)  ", "        pass  ",
                                 [E48 + "test_instruction_matches_the_host"]),
    "mxcsr-left-at-unicorns-0": ("emu/engine/avx.py", "            self.vf._set(X.UC_X86_REG_MXCSR, 0x1F80, 4)",
                                 "            pass", [E48 + "test_a_v3_process_starts_with_linuxs_mxcsr"]),
    "host-buffer-shared-across-fork": ("emu/engine/hostcpu.py", "flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,",
                                       "flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS,",
                                       [E48 + "test_the_routine_buffer_is_private_to_a_forked_process"]),
    "store-read-as-a-source": ("emu/engine/hostexec.py", "    p.read = not p.write\n", "    p.read = True\n",
                               [E48 + "test_a_store_is_hooked_as_a_write_only_and_a_load_as_a_read_only"]),
    # issue #48 items 2-5: children, XSTATE_BV and the handler's FPU state, the v4 part, ADX/SHA sites
    "fork-child-without-sites": ("emu/linux/proctable.py", "            child.avx.sites = dict(p.avx.sites)\n", "",
                                 [E48 + "test_stdlib_vector_code_runs_as_natively"]),
    "xstate-bv-always-xcr0": ("emu/linux/xstate.py", '    struct.pack_into("<Q", out, 0, xstate_bv(xcr0, zmm, kregs))',
                              '    struct.pack_into("<Q", out, 0, xcr0)',
                              [A46 + "test_xstate_bv_is_xinuse_with_x87_and_sse_always_set"]),
    "xrstor-ignores-xstate-bv": ("emu/linux/xstate.py",
                                 '    bv = struct.unpack_from("<Q", area, 0)[0] & rfbm if area is not None else 0',
                                 "    bv = rfbm if area is not None else 0",
                                 [A46 + "test_rt_sigreturn_honours_xstate_bv_and_the_features_the_frame_names"]),
    "xrstor-gp-not-raised": ("emu/linux/sigframe.py", "        r.bad = xstate.bad_header(area, xcr0, rfbm)\n",
                             '        r.bad = ""\n', [A46 + "test_an_xstate_bv_bit_xcr0_lacks_is_xrstors_gp_and_a_sigsegv"]),
    "magic2-unchecked": ("emu/linux/xstate.py", "    return xfeatures if magic2_at(xsize) == FP_XSTATE_MAGIC2 else None",
                         "    return xfeatures",
                         [A46 + "test_a_frame_whose_software_bytes_do_not_check_out_restores_the_fxsave_image_alone"]),
    "handler-keeps-interrupted-fpu": ("emu/linux/sigdeliver.py",
                                      "            init_handler_fpu(self.uc, self.level.xcr0)\n", "",
                                      [A46 + "test_the_handler_starts_from_linuxs_init_fpu_state"]),
    "v4-is-not-a-real-part": ("emu/core/cpuid.py", 'PARTS: dict[str, Part] = {"v4": ICELAKE_SP}',
                              "PARTS: dict[str, Part] = {}", [E48 + "test_the_v4_cpu_is_an_ice_lake_sp_and_v3_a_haswell"]),
    "adx-sha-left-to-unicorn": ("emu/engine/avx.py", "        or mnemonic in LEGACY", "        or False",
                                [E48 + "test_adx_and_sha_at_v3_are_the_invalid_opcode_haswell_raises"]),
    "partial-store-checks-all": ("emu/engine/hostexec.py",
                                 "    for a, b in runs:\n        ex.mem.check_write(addr + a, b - a)\n",
                                 "    ex.mem.check_write(addr, n)\n",
                                 [E48 + "test_a_masked_store_touches_and_faults_on_its_selected_elements_only"]),
    "misaligned-sha-runs": ("emu/engine/hostexec.py", ' or (kind == "" and p.size == 16) else 0', " else 0",
                            [E48 + "test_a_misaligned_legacy_sha_operand_is_refused_as_the_cpus_gp"]),
}


def run(name: str, spec) -> bool:
    """Apply one mutation in a scratch copy; return True if the killing tests fail."""
    path, old, new, tests = spec
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "repo"
        shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", ".hypothesis",
                                                                  "build", "*.egg-info"))
        f = work / path
        text = f.read_text()
        if text.count(old) != 1:
            print(f"  {name:<30} PATCH DOES NOT APPLY ({path}: the text to mutate is gone or ambiguous)")
            return False
        f.write_text(text.replace(old, new))
        try:
            p = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                               cwd=work, capture_output=True, text=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            print(f"  {name:<30} killed by a timeout ({TIMEOUT} s: the mutant hangs the tests)")
            return True
        killed = p.returncode != 0
        by = next((ln.split(" - ")[0].removeprefix("FAILED ") for ln in p.stdout.splitlines()
                   if ln.startswith(("FAILED", "ERROR"))), "")
        print(f"  {name:<30} {'killed by ' + by if killed else 'SURVIVED'}")
        return killed


def main(names: list[str]) -> int:
    chosen = {n: MUTATIONS[n] for n in (names or MUTATIONS)}
    print(f"re-applying {len(chosen)} mutation(s); each must make its killing tests fail")
    ok = [run(n, spec) for n, spec in chosen.items()]
    print(f"{sum(ok)}/{len(ok)} killed")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
