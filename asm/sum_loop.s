; A call-free arithmetic loop: the shape Go compiles `for i := 0; i < n; i++ { s += i*i ^ s>>3 }` to.
; Leaf, no frame, no calls: every instruction is an async safe point, and before Go 1.14 nothing
; in here could ever be preempted.
; In:  RCX = n (iterations).  Out: RAX = the sum.
sum_loop:
    xor eax, eax
    xor edx, edx
.loop:
    mov r8, rdx
    imul r8, rdx
    mov r9, rax
    shr r9, 3
    xor r8, r9
    add rax, r8
    inc rdx
    cmp rdx, rcx
    jb .loop
    ret
