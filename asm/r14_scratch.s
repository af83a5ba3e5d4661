; R14 is g under ABIInternal, but the stub may interrupt an open-coded ABIInternal -> ABI0
; transition where R14 holds something else (mkpreempt.go's reason for reloading g from TLS).
; This loop keeps a running value in R14 for most of each iteration and puts g back before it
; returns, so a stub that "restores" R14 by reloading g instead of from its save slot is caught.
; In: RCX = iterations.  Out: RAX = a checksum.
r14_scratch:
    push rbp
    mov rbp, rsp
    sub rsp, 16
    mov qword ptr [rsp + 8], r14     ; keep g in the frame
    xor eax, eax
    mov r14, rcx
.loop:
    add r14, 0x3779b97f
    rol r14, 7
    xor rax, r14
    dec rcx
    jnz .loop
    mov r14, qword ptr [rsp + 8]     ; back to g before returning to ABIInternal code
    add rsp, 16
    pop rbp
    ret
