; The places where Go never preempts asynchronously -- one of each, marked as Go marks them
; (emu/FACTS.md §4.2 prologue window, §4.4 write barriers, atomic RMW loops, nosplit, runtime code;
; §2.5 checks 5-7). A sweep refuses exactly these PCs, each with Go's reason.
; In: RCX = rounds.
;@data slot 8 0
;@data flags 8 0
;@data zbuf 64 0xff
unsafe_tour:
    push rbp
    mov rbp, rsp
    sub rsp, 16
.round:
    mov qword ptr [rsp + 8], rcx
    mov rdi, slot                    ; 1. *slot = &zbuf, with its write-barrier check
    mov rsi, zbuf
    call store_pointer
    mov rdi, flags                   ; 2. atomic.Or32(&flags, 4): a CMPXCHG loop
    mov esi, 4
    call atomic_or32
    mov rdi, rcx                     ; 3. a //go:nosplit function
    call nosplit_inc
    mov rdi, zbuf                    ; 4. an assembly runtime function (REP STOSB)
    mov ecx, 64
    call memclr
    mov rdi, zbuf                    ; 5. runtime.add(p, 8) inlined into this function
    ;@inline runtime.add
    lea rax, [rdi + 8]
    ;@inline-end
    call procyield                   ; 6. a runtime function written in Go
    mov rcx, qword ptr [rsp + 8]
    dec rcx
    jnz .round
    add rsp, 16
    pop rbp
    ret

; *rdi = rsi as the Go compiler emits a pointer store: the flag test is safe; the branch, the
; barrier call, the buffer stores and the store itself are unsafe.
store_pointer:
    cmp dword ptr [writeBarrier], 0
    ;@unsafe
    jne .wb
    mov qword ptr [rdi], rsi
    ;@safe
    ret
.wb:
    ;@unsafe
    call gcWriteBarrier2
    mov qword ptr [r11], rsi
    mov rax, qword ptr [rdi]
    mov qword ptr [r11 + 8], rax
    mov qword ptr [rdi], rsi
    ;@safe
    ret

; *(*uint32)rdi |= esi: LoweredAtomicOr32 is a multi-instruction loop, marked unsafe.
atomic_or32:
    ;@unsafe
    mov eax, dword ptr [rdi]
.retry:
    mov edx, eax
    or edx, esi
    lock cmpxchg dword ptr [rdi], edx
    jne .retry
    ;@safe
    ret

;@nosplit
nosplit_inc:
    lea rax, [rdi + 1]
    ret

;@asm
;@goname runtime.memclrNoHeapPointers
memclr:
    xor eax, eax
    cld
    rep stosb
    ret

;@goname runtime.procyield
procyield:
    mov ecx, 3
.again:
    pause
    dec ecx
    jnz .again
    ret
