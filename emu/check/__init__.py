"""check: the oracle and the verifiers, pure functions of the program model and a machine state.

safepoint is Go's isAsyncSafePoint in the runtime's order, with stable reason codes and each
release's rules (and what doSigPreempt reads of g/m/p); inject is sigctxt.pushCall; verify compares
register dumps, flags, vector registers and the stack bit for bit; mutants are broken stubs every
check must catch (check-stub's mutation score).

May import: core, front (layer 3). No Unicorn here: both engines call in.
"""
