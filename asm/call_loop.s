; A loop that calls a function with a Go-style prologue, as the Go compiler emits it:
;   CMPQ SP, 16(R14); JLS morestack  ... PUSHQ BP; MOVQ SP, BP; SUBQ $n, SP
; The JLS and the morestack spill/call block are unsafe points (PCDATA_UnsafePoint -2): a signal
; there is refused, and the request is honoured cooperatively at the next prologue instead.
; In: RCX = iterations.  Out: RAX = sum of i*i + 1 for i = n..1.
call_loop:
    push rbp
    mov rbp, rsp
    sub rsp, 16
    xor eax, eax
.loop:
    mov qword ptr [rsp + 8], rcx     ; keep the counter across the call ([rsp] is the callee's spill slot)
    mov rdi, rcx
    call square_add
    mov rcx, qword ptr [rsp + 8]
    dec rcx
    jnz .loop
    add rsp, 16
    pop rbp
    ret

; square_add: RAX += RDI*RDI + 1 (a leaf with a frame, so it keeps its stack check).
square_add:
    cmp rsp, qword ptr [r14 + 16]    ; stackguard0
    ;@unsafe
    jbe .morestack
    ;@safe
    push rbp
    mov rbp, rsp
    sub rsp, 8
    mov qword ptr [rsp], rdi
    mov rdx, rdi
    imul rdx, rdi
    add rax, rdx
    inc rax
    add rsp, 8
    pop rbp
    ret
.morestack:
    ;@unsafe
    mov qword ptr [rsp + 8], rdi     ; spill the register argument
    call morestack_noctxt
    ;@safe
    mov rdi, qword ptr [rsp + 8]
    jmp square_add
