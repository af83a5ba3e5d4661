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
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def _on_sigint(self, signum, frame) -> None:
        p = self.current()
        if p is not None and p.in_slice:
            p.interrupted = p.interrupt_raises = True
            p.uc.emu_stop()
            return
        raise KeyboardInterrupt

    def __exit__(self, *exc) -> None:
        import signal
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
        p = self.current()
        if p is not None:
            p.interrupted = p.interrupt_raises = False
