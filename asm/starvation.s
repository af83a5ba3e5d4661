; The Go 1.14 story: on GOMAXPROCS=1 a call-free loop never reaches a prologue, so before async
; preemption nothing could stop it and every other goroutine on its P starved.

; spin: a call-free loop that never ends (for {} with some arithmetic).
spin:
    xor eax, eax
.loop:
    add rax, 3
    xor rax, rdx
    jmp .loop

; sleeper: sleep 100 µs (time.Sleep -> gopark on a timer), RCX times; the scheduler records how
; late each wake-up is. In: RCX = wake-ups.
sleeper:
    push rbp
    mov rbp, rsp
    sub rsp, 16
.again:
    mov qword ptr [rsp + 8], rcx
    mov eax, 100000                  ; 100 µs in ns
    call nanosleep
    mov rcx, qword ptr [rsp + 8]
    dec rcx
    jnz .again
    add rsp, 16
    pop rbp
    ret

; spin_calls: a loop that calls a function with a stack-check prologue: cooperative preemption
; stops it even without signals (Go 1.13). Never ends.
spin_calls:
    xor eax, eax
.loop:
    mov rdi, rax
    call work
    jmp .loop

work:
    cmp rsp, qword ptr [r14 + 16]
    ;@unsafe
    jbe .morestack
    ;@safe
    push rbp
    mov rbp, rsp
    lea rax, [rdi + 1]
    pop rbp
    ret
.morestack:
    ;@unsafe
    mov qword ptr [rsp + 8], rdi
    call morestack_noctxt
    ;@safe
    mov rdi, qword ptr [rsp + 8]
    jmp work
