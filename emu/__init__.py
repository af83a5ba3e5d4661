"""preemu: Go's asynchronous goroutine preemption on x86-64, emulated one instruction at a time.

Package map (dependencies run downwards only):

  regs -> layout -> stubgen            one register table, the stub frame derived from it
  gostructs, memmap                    g/m/p field offsets and every guest address
  asmfront -> program                  .s files with metadata directives -> Program
  safepoint, inject                    isAsyncSafePoint and pushCall (pure, no Unicorn)
  rtcode -> machine                    runtime sentinels; the sole owner of the Unicorn engine
  gmp                                  g/m/p records in emulated memory
  sweep (+ verify)                     inject at every boundary and check restoration
  scenario, report, cli                TOML scenarios, text/JSON output, the `preemu` command
"""

__version__ = "0.1.0"
