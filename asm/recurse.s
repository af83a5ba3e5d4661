; Deep recursion through a Go-style prologue: with a normal stackguard0 the JLS is taken when the
; frame would not fit, morestack_noctxt -> newstack copies the stack to one twice the size
; (adjusting the frame-pointer chain) and the function re-runs its prologue.
; In: RDI = n.  Out: RAX = n + (n-1) + ... + 1.  48 bytes of stack per level.
sum_rec:
    cmp rsp, qword ptr [r14 + 16]
    ;@unsafe
    jbe .morestack
    ;@safe
    push rbp
    mov rbp, rsp
    sub rsp, 32                      ; [rsp] = the callee's spill slot, [rsp+8] = n
    mov qword ptr [rsp + 8], rdi
    test rdi, rdi
    jz .zero
    dec rdi
    call sum_rec
    add rax, qword ptr [rsp + 8]
    add rsp, 32
    pop rbp
    ret
.zero:
    xor eax, eax
    add rsp, 32
    pop rbp
    ret
.morestack:
    ;@unsafe
    mov qword ptr [rsp + 8], rdi     ; spill the register argument into the caller's frame
    call morestack_noctxt
    ;@safe
    mov rdi, qword ptr [rsp + 8]
    jmp sum_rec
