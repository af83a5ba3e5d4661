; Heap pointers in the places only an async-preemption-aware GC finds: a GC runs at every
; injection point (preemu sweep --gc) and the object must survive until its last use.
; Each function allocates with `call newobject` (RAX = size -> RAX = zeroed object) and returns
; a value read back from the object at the end.
;@data magic 8 0

; only in a register (R12) across a call-free loop.  In: RCX = iterations.  Out: RAX = 0x1234.
ptr_in_reg:
    push rbp
    mov rbp, rsp
    mov r8, rcx
    mov eax, 64
    call newobject
    mov qword ptr [rax + 8], 0x1234
    mov r12, rax
    xor eax, eax
.loop:
    add rax, r8
    dec r8
    jnz .loop
    mov rax, qword ptr [r12 + 8]
    pop rbp
    ret

; only in an XMM register.  In: RCX = iterations.  Out: RAX = 0x5678.
ptr_in_xmm:
    push rbp
    mov rbp, rsp
    mov r8, rcx
    mov eax, 32
    call newobject
    mov qword ptr [rax], 0x5678
    movq xmm3, rax
    xor eax, eax
.loop:
    add rax, r8
    dec r8
    jnz .loop
    movq rdx, xmm3
    mov rax, qword ptr [rdx]
    pop rbp
    ret

; only as interior pointers: RSI/RDI in the middle of a REP MOVSB from object A to object B.
; Out: RAX = the last word of B (A's last word, 0x3131313131313131).
ptr_interior:
    push rbp
    mov rbp, rsp
    mov eax, 256
    call newobject
    mov rdi, rax
    mov ecx, 256
    mov al, 0x31
    rep stosb                        ; fill A
    lea rsi, [rdi - 256]             ; RSI = A
    mov eax, 256
    call newobject
    mov rdi, rax                     ; RDI = B; from here A and B are reachable only through RSI/RDI
    mov ecx, 256
    rep movsb
    mov rax, qword ptr [rdi - 8]
    pop rbp
    ret

; only in the caller's stack slot, which the stack map at the call site declares.
; Out: RAX = 0x4242.  In: RCX = iterations of the callee's loop.
ptr_in_caller_slot:
    push rbp
    mov rbp, rsp
    sub rsp, 16
    mov qword ptr [rsp + 8], rcx
    mov eax, 48
    call newobject
    mov qword ptr [rax + 16], 0x4242
    mov qword ptr [rsp], rax         ; the only reference: a frame slot
    xor eax, eax
    mov rcx, qword ptr [rsp + 8]
    ;@ptrs 0
    call spin_no_ptrs
    mov rax, qword ptr [rsp]
    mov rax, qword ptr [rax + 16]
    add rsp, 16
    pop rbp
    ret

spin_no_ptrs:
    xor eax, eax
    xor edx, edx
    xor r8d, r8d
    xor r9d, r9d
    xor r12d, r12d
    xor r13d, r13d
.loop:
    add rax, rcx
    dec rcx
    jnz .loop
    ret

; only in the interrupted function's own frame slot (a spill the compiler has no stack map for at
; an arbitrary PC): found only because the interrupted frame is scanned conservatively.
; In: RCX = iterations.  Out: RAX = 0x7777.
ptr_in_frame_slot:
    push rbp
    mov rbp, rsp
    sub rsp, 16
    mov r8, rcx
    mov eax, 16
    call newobject
    mov qword ptr [rax], 0x7777
    mov qword ptr [rsp], rax
    xor eax, eax
    xor edx, edx
.loop:
    add rdx, r8
    dec r8
    jnz .loop
    mov rax, qword ptr [rsp]
    mov rax, qword ptr [rax]
    add rsp, 16
    pop rbp
    ret

; a dead, stale pointer left in the interrupted frame: the object is never used again, but the
; conservative scan keeps it ("retained conservatively") -- allowed, and reported.
; In: RCX = iterations.  Out: RAX = sum.
stale_ptr:
    push rbp
    mov rbp, rsp
    sub rsp, 16
    mov r8, rcx
    mov eax, 16
    call newobject
    mov qword ptr [rsp], rax         ; dead from here on
    xor eax, eax
.loop:
    add rax, r8
    dec r8
    jnz .loop
    add rsp, 16
    pop rbp
    ret

; a global holding a pointer (precise root).  Out: RAX = 0x9999.
;@data gptr 8 0 ptrs
ptr_in_global:
    push rbp
    mov rbp, rsp
    mov r8, rcx
    mov eax, 16
    call newobject
    mov qword ptr [rax], 0x9999
    mov qword ptr [gptr], rax
    xor eax, eax
.loop:
    add rdx, r8
    dec r8
    jnz .loop
    mov rax, qword ptr [gptr]
    mov rax, qword ptr [rax]
    pop rbp
    ret
