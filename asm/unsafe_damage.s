; Why unsafe is unsafe: code Go refuses to preempt because injecting the call would break it.
; Run with `preemu sweep ... --force-unsafe` to see the damage (tests/test_force_unsafe.py).

; DUFFZERO-style assembly that keeps data BELOW SP: it saves BP at -8(SP) and points BP there
; (Go 1.2x's duffzero did this). pushCall writes the resume PC exactly there.
; In: RCX = rounds.  Out: RAX = rounds; RBP is preserved.
;@asm
;@goname runtime.duffzero
below_sp:
    mov rax, rcx
.round:
    mov qword ptr [rsp - 8], rbp
    lea rbp, [rsp - 8]
    mov qword ptr [rsp - 16], 0
    mov qword ptr [rsp - 24], 0
    mov rbp, qword ptr [rsp - 8]
    dec rcx
    jnz .round
    ret

; A function whose frame uses nearly the whole 2 KiB stack a goroutine starts with: below SP there is
; less room than asyncPreemptStack, so the stub would write under stack.lo, into the guard page.
; (Real Go code cannot get here: its prologue would have grown the stack first.)
; In: RCX = rounds.
;@nosplit
big_frame:
    sub rsp, 1800
    mov rax, rcx
.spin:
    mov qword ptr [rsp], rax
    dec rax
    jnz .spin
    add rsp, 1800
    ret
