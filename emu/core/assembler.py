"""Keystone's x86-64 assembler, made with Ctrl-C held off.

keystone.Ks.__init__ is Python code calling into the library: a KeyboardInterrupt raised inside it (a Ctrl-C while
a module that makes one is imported) leaves an object without its handle, whose __del__ then fails when the
interpreter exits, printing "Exception ignored in: <function Ks.__del__ ...> AttributeError: 'Ks' object has no
attribute '_ksh'" after preemu's own "interrupted (Ctrl-C)" line. So SIGINT is blocked for the calling thread while
the object is made; a Ctrl-C that came meanwhile is delivered as the mask is restored, once the object is whole.
Mirrors no Go source.
"""
from __future__ import annotations

import signal

import keystone


def x86_64() -> keystone.Ks:
    """A new Keystone assembler for x86-64."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return keystone.Ks(keystone.KS_ARCH_X86, keystone.KS_MODE_64)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
