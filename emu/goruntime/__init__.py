"""The Go runtime inside a real program, read and checked from outside: preemu's introspection of the guest's
runtime, through the emulated Linux process (emu/linux) it runs in.

  goprocess  the process preemu runs: the kernel's Process with the oracle and the watch attached
  watch      each signal's fate, each injection's path, the register check at asyncPreempt's RET
  stubsaves  the vector state that check compares: what the stub's own HasAVX512/HasAVX2 dispatch saves
  oracle     preemu's safe-point oracle (emu/check/safepoint.py) asked with the binary's own g/m/p offsets
  gclock     one goroutine's instructions, counted exactly
  geffects   what a Go function leaves behind (results, globals), read with the binary's ABI and DWARF
  heapgraph  a value's object graph through the heap (DWARF-typed, address-free), for geffects
  heapmaps   its swiss maps: their layout from DWARF, their full slots, a key's canonical text
  realgc     the runtime's own GC cycle, triggered and read back (numgc, spans, freed objects)
  heapspans  the heap as the runtime's metadata says: spans, slots, allocation and mark bits
  freeduse   which access to a freed object is the program's use of it (the watch's rules)
  quarantine freed objects kept out of reuse under --gc, as AddressSanitizer does
  rngstate   the runtime's per-M random state, found and drawn again
  crashtext  how a run ended badly, in the runtime's own words

Each module reads the runtime's state (its g/m/p, spans, pclntab, DWARF, printed text) of a process the kernel
(emu/linux) runs; the kernel never imports this package: its signal delivery reports to the watch a process is
given (goprocess.GoProcess). The drivers that use it are in emu/drive (realsweep, gsweep, grequest, eachpc).
May import: core, front, check, engine, linux (layer 5, above the kernel it reads through; beside emu/output).
"""
