"""teach: `preemu explain`, one preemption told step by step.

story narrates a sweep-world injection (the Story every renderer reads; stubsteps its stub part),
sched one signal of a scheduler scenario, real the real program's preemption (realsignal: sighandler,
pushCall, rt_sigreturn; realresume: asyncPreempt's frame, schedule, the runtime's GC; realat: --at FILE:LINE
and FUNC+OFF as a boundary of its goroutine); notes holds the
explanatory texts, fmt how registers and code locations are written; text and html render a Story (the
page is tested in Chromium).

May import: every layer below it: core, front, check, model, linux, output, drive (layer 7).
"""
