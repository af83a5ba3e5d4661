; A BROKEN asyncPreempt for tests: it returns at once. Nothing is saved, so nothing is clobbered,
; and asyncPreempt2 is never called: the goroutine is never descheduled, so the injection tests nothing.
;@asm
;@goname runtime.asyncPreempt
asyncPreempt:
    ret
