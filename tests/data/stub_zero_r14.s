; A BROKEN asyncPreempt for tests: the generated go1.14-layout stub with R14 (the goroutine's g in
; ABIInternal) zeroed instead of restored. The goroutine runs on with g = 0 and the program dies in the
; runtime: a sweep tells the crash in the runtime's words (emu/goruntime/crashtext.py).
; asyncPreempt, go1.14 layout: saves every register, calls asyncPreempt2, restores them.
; Frame: resume PC at S-8, RBP at S-16, RFLAGS at S-24, 368-byte save area below.
;@asm
;@goname runtime.asyncPreempt
asyncPreempt:
    push rbp                                    ; PUSHQ BP
    mov rbp, rsp                                ; MOVQ SP, BP
    pushfq                                      ; PUSHFQ, before ADJSP clobbers the flags
    sub rsp, 368                                ; ADJSP $368
    mov qword ptr [rsp + 0], rax                ; AX -> 0(SP)
    mov qword ptr [rsp + 8], rcx                ; CX -> 8(SP)
    mov qword ptr [rsp + 16], rdx               ; DX -> 16(SP)
    mov qword ptr [rsp + 24], rbx               ; BX -> 24(SP)
    mov qword ptr [rsp + 32], rsi               ; SI -> 32(SP)
    mov qword ptr [rsp + 40], rdi               ; DI -> 40(SP)
    mov qword ptr [rsp + 48], r8                ; R8 -> 48(SP)
    mov qword ptr [rsp + 56], r9                ; R9 -> 56(SP)
    mov qword ptr [rsp + 64], r10               ; R10 -> 64(SP)
    mov qword ptr [rsp + 72], r11               ; R11 -> 72(SP)
    mov qword ptr [rsp + 80], r12               ; R12 -> 80(SP)
    mov qword ptr [rsp + 88], r13               ; R13 -> 88(SP)
    mov qword ptr [rsp + 96], r14               ; R14 -> 96(SP)
    mov qword ptr [rsp + 104], r15              ; R15 -> 104(SP)
    movups xmmword ptr [rsp + 112], xmm0        ; X0 -> 112(SP)
    movups xmmword ptr [rsp + 128], xmm1        ; X1 -> 128(SP)
    movups xmmword ptr [rsp + 144], xmm2        ; X2 -> 144(SP)
    movups xmmword ptr [rsp + 160], xmm3        ; X3 -> 160(SP)
    movups xmmword ptr [rsp + 176], xmm4        ; X4 -> 176(SP)
    movups xmmword ptr [rsp + 192], xmm5        ; X5 -> 192(SP)
    movups xmmword ptr [rsp + 208], xmm6        ; X6 -> 208(SP)
    movups xmmword ptr [rsp + 224], xmm7        ; X7 -> 224(SP)
    movups xmmword ptr [rsp + 240], xmm8        ; X8 -> 240(SP)
    movups xmmword ptr [rsp + 256], xmm9        ; X9 -> 256(SP)
    movups xmmword ptr [rsp + 272], xmm10       ; X10 -> 272(SP)
    movups xmmword ptr [rsp + 288], xmm11       ; X11 -> 288(SP)
    movups xmmword ptr [rsp + 304], xmm12       ; X12 -> 304(SP)
    movups xmmword ptr [rsp + 320], xmm13       ; X13 -> 320(SP)
    movups xmmword ptr [rsp + 336], xmm14       ; X14 -> 336(SP)
    movups xmmword ptr [rsp + 352], xmm15       ; X15 -> 352(SP)
    call asyncPreempt2                          
    movups xmm15, xmmword ptr [rsp + 352]       
    movups xmm14, xmmword ptr [rsp + 336]       
    movups xmm13, xmmword ptr [rsp + 320]       
    movups xmm12, xmmword ptr [rsp + 304]       
    movups xmm11, xmmword ptr [rsp + 288]       
    movups xmm10, xmmword ptr [rsp + 272]       
    movups xmm9, xmmword ptr [rsp + 256]        
    movups xmm8, xmmword ptr [rsp + 240]        
    movups xmm7, xmmword ptr [rsp + 224]        
    movups xmm6, xmmword ptr [rsp + 208]        
    movups xmm5, xmmword ptr [rsp + 192]        
    movups xmm4, xmmword ptr [rsp + 176]        
    movups xmm3, xmmword ptr [rsp + 160]        
    movups xmm2, xmmword ptr [rsp + 144]        
    movups xmm1, xmmword ptr [rsp + 128]        
    movups xmm0, xmmword ptr [rsp + 112]        
    mov r15, qword ptr [rsp + 104]              
    xor r14, r14                                ; R14 (g) zeroed, not restored               
    mov r13, qword ptr [rsp + 88]               
    mov r12, qword ptr [rsp + 80]               
    mov r11, qword ptr [rsp + 72]               
    mov r10, qword ptr [rsp + 64]               
    mov r9, qword ptr [rsp + 56]                
    mov r8, qword ptr [rsp + 48]                
    mov rdi, qword ptr [rsp + 40]               
    mov rsi, qword ptr [rsp + 32]               
    mov rbx, qword ptr [rsp + 24]               
    mov rdx, qword ptr [rsp + 16]               
    mov rcx, qword ptr [rsp + 8]                
    mov rax, qword ptr [rsp + 0]                
    add rsp, 368                                ; ADJSP $-368, before POPFQ
    popfq                                       
    pop rbp                                     
    ret                                         
