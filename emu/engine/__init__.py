"""engine: what both engines (the model world and the real process) need from Unicorn beyond its Python
binding: callbacks in machine code for hooks that fire too often for Python (nativehook), the TLB fill
that lets stores run at full speed (pagetable), and a page fault's address worked out from the faulting
instruction, since any hook that would report it slows every store (faultaddr), guest memory in a
host buffer Python owns (hostmap), the C API called without the binding's conversions (capi), several
C calls made by one ctypes call (callchain), and the real-program sweep's per-point path compiled at install
time (_native*.c, selected by native: the rt_sigframe, register and memory calls, hooks' C trampoline).

May import: core (layer 3 of the package map in emu/__init__.py, beside check).
"""
