; Multi-word (bignum) arithmetic: a += b with ADC, then a -= b with SBB, word by word.
; CF carries from one word to the next and is live at EVERY boundary inside both loops:
; MOV, LEA and DEC leave CF alone. A stub that loses RFLAGS breaks the carry chain.
; In:  RCX = words (<= 64).  Buffers: a (0xff bytes: every ADC carries), b (0x01 bytes), a_orig.
; Out: RAX = number of words that produced a carry out during the ADC pass; a == a_orig again.
;@data a 512 0xff
;@data a_orig 512 0xff
;@data b 512 0x01
adc_chain:
    mov r8, rcx                      ; keep the word count
    xor r9d, r9d                     ; carry counter (also clears CF)
    mov rdi, a
    mov rsi, b
.add:
    mov rax, qword ptr [rsi]
    adc qword ptr [rdi], rax         ; CF in, CF out
    setc dl
    movzx edx, dl
    add r9, rdx                      ; clobbers CF: restore it from DL
    bt edx, 0                        ; CF = the carry we just counted
    lea rsi, [rsi + 8]
    lea rdi, [rdi + 8]
    dec rcx                          ; DEC does not touch CF
    jnz .add
    mov rcx, r8
    mov rdi, a
    mov rsi, b
    clc
.sub:
    mov rax, qword ptr [rsi]
    sbb qword ptr [rdi], rax         ; borrow in, borrow out
    lea rsi, [rsi + 8]
    lea rdi, [rdi + 8]
    dec rcx
    jnz .sub
    mov rax, r9
    ret
