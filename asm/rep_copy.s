; REP string instructions: every iteration is its own interrupt boundary, so the signal lands
; with RCX/RSI/RDI partly advanced and the CPU resumes the same REP instruction.
; rep_copy: fill src with a pattern (REP STOSQ of one word, then a word loop), copy it forwards
; (REP MOVSB, DF=0) into dst and backwards (REP MOVSB, DF=1) into dst2. In: RCX = bytes (<= 4096,
; a multiple of 8). Out: dst == src, dst2 == src.
;@data src 4096 0x00
;@data dst 4096 0x00
;@data dst2 4096 0x00
rep_copy:
    mov r8, rcx
    ; REP STOSQ: fill src with one 64-bit value
    mov rdi, src
    mov rcx, r8
    shr rcx, 3
    mov rax, 0x0123456789abcdef
    cld
    rep stosq
    ; make every word different
    mov rdi, src
    mov rcx, r8
    shr rcx, 3
.mix:
    xor qword ptr [rdi], rcx
    add rdi, 8
    dec rcx
    jnz .mix
    ; forward copy, DF = 0
    mov rsi, src
    mov rdi, dst
    mov rcx, r8
    rep movsb
    ; backward copy, DF = 1: start at the last byte
    lea rsi, [r8 + src - 1]
    lea rdi, [r8 + dst2 - 1]
    mov rcx, r8
    std
    rep movsb
    cld
    mov rax, r8
    ret

; rep_stosq_down: REP STOSQ with DF = 1, storing downwards from the end of dst.
; In: RCX = words (<= 512), RAX = value.
rep_stosq_down:
    lea rdi, [rcx*8 + dst - 8]
    std
    rep stosq
    cld
    ret
