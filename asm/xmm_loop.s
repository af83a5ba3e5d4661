; State kept only in XMM registers across a loop (integer and floating-point SSE).
; The GPRs hold nothing but the counter: a stub that skips any XMM register corrupts the result.
; In:  RCX = iterations.  Out: RAX, RDX = a fold of the XMM state.
xmm_loop:
    pxor xmm4, xmm4
    mov eax, 3
    cvtsi2sd xmm6, rax
    movq xmm0, rcx
.loop:
    paddq xmm1, xmm0
    pxor xmm2, xmm1
    pshufd xmm3, xmm2, 0x4e
    paddd xmm4, xmm3
    movdqa xmm9, xmm4
    psllq xmm9, 7
    pxor xmm10, xmm9
    addsd xmm5, xmm6
    mulsd xmm7, xmm5
    movaps xmm8, xmm7
    andps xmm8, xmm10
    por xmm11, xmm8
    paddb xmm12, xmm11
    psubw xmm13, xmm12
    pmaxsw xmm14, xmm13
    dec rcx
    jnz .loop
    movq rax, xmm14
    pxor xmm14, xmm12
    movq rdx, xmm14
    ret
