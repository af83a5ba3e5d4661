"""Whole-program mode: run an unmodified static linux/amd64 Go binary in Unicorn, deterministically.

The Go runtime's own code does everything (sysmon, retake/preemptone, tgkill, sighandler,
doSigPreempt, pushCall, asyncPreempt); this package plays the Linux kernel underneath it:

  elfimage   the ELF file: PT_LOAD segments, .symtab, GOAMD64 check (refuses v3+)
  memory     the address space: mmap reservations and commits, munmap, mprotect, madvise (with the
             TLB fill of emu/engine/pagetable.py); hostpages the host pages behind it (and snapshots)
  startup    the initial stack: argv, envp, auxv (AT_PAGESZ, AT_RANDOM, AT_HWCAP, AT_SYSINFO_EHDR)
  vdso       a vDSO whose clock_gettime, gettimeofday and time read virtual time from the counter's page
  cpuid      CPUID pinned to a documented feature set without AVX
  icount     exact instruction counts per translated block (a native UC_HOOK_BLOCK callback)
  regbatch   registers and memory through Unicorn's C API with no per-call conversion
  sigframe   the x86-64 rt_sigframe (siginfo, ucontext, FXSAVE image) and rt_sigreturn
  kernel     the syscall table, dispatching to one module per family: sys_proc, sys_mem, sys_signal,
             sys_time, sys_io, sys_file, sys_socket (tcp: FIN, RST, shutdown), sys_msg (sendmsg,
             recvmsg, SCM_RIGHTS, SCM_CREDENTIALS) (sysabi: errnos and the ABI's helpers)
  threads    the kernel's threads (FsState: the working directory CLONE_FS shares) and what they wait on;
             fds the open files, pipes and epoll; fifo the named pipes of /tmp;
             mounts and tmpfs the file namespace (the mounts, /tmp in memory)
  process    the run loop: one Unicorn, threads multiplexed in exact instruction quanta; its parts:
             scheduling (threads blocked and woken), sigdeliver (signals sent, delivered, returned
             from), services (what syscall handlers ask of it), cpuhooks (RDTSC, CPUID, single steps)
  snapshot   a whole-process snapshot (the host pages' copy-on-write + the kernel's Python state)
  schedule   a PCT schedule the scheduler consults under --schedules (priorities, change points)

What preemu reads and checks of the Go runtime inside the process (the watch each signal is reported to, the
oracle, the GC, a function's effects) is emu/goruntime's, above this package: the kernel never imports it.

The drivers that use this engine are in emu/drive (realsweep, gsweep, exec_scenario), its reports in
emu/output (exec_report, realsweep_report), `explain` of Go input in emu/teach/real.py; the process they
run is emu/goruntime/goprocess.py's GoProcess (this package's Process with the Go runtime watched).
May import: core, front, check, engine (layer 4, beside emu/model, the other engine, which it does not import;
below emu/goruntime).

Facts it rests on (measured in a feasibility run of Go 1.27.3 under Unicorn 2.1.4): the runtime needs
only AT_PAGESZ, AT_RANDOM and AT_NULL in auxv; without a vDSO every clock read is a clock_gettime
syscall; in a SYSCALL hook Unicorn adds 2 to RIP after the callback (even to a RIP written there);
emu_start(count=) cannot report the count when a hook stops early (and a per-instruction hook runs the
engine several times slower than a per-block one); VEX.256 faults and VEX.128 is
silently executed as its legacy SSE form.
"""
