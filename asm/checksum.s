; Checksum-equivalence loop: every GPR that signal-return paths are known to clobber (RCX and R11
; by SYSRET, R15, ...) carries live state in every iteration, together with the flags and XMM.
; A clean run and a run with an injection at EVERY boundary (back to back) must end bit-identical.
; In: RCX = iterations.  Out: RAX = checksum.
checksum:
    push rbp
    mov rbp, rsp
    mov r8, rcx
    mov r11, 0x5bd1e995
    mov r15, 0x27d4eb2d
    xor eax, eax
    pxor xmm1, xmm1
.loop:
    mov rdx, r11
    imul rdx, r15
    add rax, rdx
    adc r11, rcx                     ; CF from the ADD is live here
    rol r15, 13
    xor r15, rax
    movq xmm2, rax
    paddq xmm1, xmm2
    lea r9, [rax + r11]
    sbb r10, r9                      ; CF from the ADC/ROL chain
    xor rax, r10
    dec rcx
    jnz .loop
    movq rdx, xmm1
    xor rax, rdx
    pop rbp
    ret
