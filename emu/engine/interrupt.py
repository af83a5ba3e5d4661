"""Ctrl-C while an engine runs: stop it at the end of its run and raise KeyboardInterrupt in plain Python.

A KeyboardInterrupt raised inside an engine callback (a hook Unicorn calls through ctypes) is printed by
ctypes as "Exception ignored on calling ctypes callback" and dropped: the run goes on as if nothing had
happened. So while a command runs an engine, SIGINT only asks it to stop (uc.emu_stop) and marks the
holder; the holder raises once the engine call returns (linux/process.py at the slice boundary,
model/machine.py after its run). Between engine runs the handler raises at once.
A holder (a linux Process or a model Machine) has `uc`, `in_slice` (inside an engine call), `interrupted`
and `interrupt_raises`.
"""
from __future__ import annotations


class ctrl_c:
    """While a command runs engines: Ctrl-C stops the current holder's engine and raises KeyboardInterrupt
    when its call returns (never inside an engine callback, nor inside a syscall the kernel model is
    handling); between runs it raises at once. `current()` gives the holder (or None)."""

    def __init__(self, current):
        self.current = current

    def __enter__(self):
        import signal
        import threading
        self.old = None
        self.flagged: list = []               # holders told to stop, whose KeyboardInterrupt is still to come
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def _on_sigint(self, signum, frame) -> None:
        p = engine_holder(frame)
        if p is None:
            p = self.current()
        if p is not None and p.in_slice:
            p.interrupted = p.interrupt_raises = True
            p.uc.emu_stop()
            self.flagged.append(p)
            return
        raise KeyboardInterrupt

    def __exit__(self, exc_type, *exc) -> None:
        import signal
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
        p = self.current()
        unraised = any(h.interrupted for h in self.flagged)     # the engine stopped, but the run ended before its
        for h in [*self.flagged, p]:                            # holder raised (its last run): raised here
            if h is not None:
                h.interrupted = h.interrupt_raises = False
        if unraised and exc_type is None:
            raise KeyboardInterrupt


#: the functions that call into an engine, holding `self` (a linux Process, a model Machine) with in_slice set
_ENGINE_CALLERS = ("_run_slice", "_engine_run")


def engine_holder(frame):
    """The holder whose engine call the interrupted code is inside (found on the Python stack: a callback the
    engine called is above its caller's frame), or None. Any holder, not only `current()`'s: a sweep also runs
    other processes (its references, its boot) whose callbacks a Ctrl-C must not raise in either."""
    while frame is not None:
        if frame.f_code.co_name in _ENGINE_CALLERS:
            holder = frame.f_locals.get("self")
            if getattr(holder, "in_slice", False):
                return holder
        frame = frame.f_back
    return None
