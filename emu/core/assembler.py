"""Keystone's x86-64 assembler, made with Ctrl-C held off.

keystone.Ks.__init__ is Python code calling into the library: a KeyboardInterrupt raised inside it (a Ctrl-C while
a module that makes one is imported) leaves an object without its handle, whose __del__ then fails when the
interpreter exits, printing "Exception ignored in: <function Ks.__del__ ...> AttributeError: 'Ks' object has no
attribute '_ksh'" after preemu's own "interrupted (Ctrl-C)" line. So, in the main thread (where Python runs signal
handlers), SIGINT's handler only notes the signal while the object is made; the handler it replaced is then put
back and given the signal, once the object is whole (a blocked signal mask would not do: the kernel gives a
process's SIGINT to any thread that does not block it, and Python raises it in the main thread all the same).
Mirrors no Go source.
"""
from __future__ import annotations

import os
import signal
import threading

import keystone


def x86_64() -> keystone.Ks:
    """A new Keystone assembler for x86-64."""
    if threading.current_thread() is not threading.main_thread():
        return keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64)    # (no handler runs here)
    came: list = []
    held = signal.signal(signal.SIGINT, lambda signum, frame: came.append(frame))
    try:
        ks = keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64)
    finally:
        signal.signal(signal.SIGINT, held if held is not None else signal.SIG_DFL)
    if came:
        if callable(held):
            held(signal.SIGINT, came[0])      # KeyboardInterrupt, or preemu's own handler's answer
        elif held == signal.SIG_DFL:
            os.kill(os.getpid(), signal.SIGINT)
    return ks
