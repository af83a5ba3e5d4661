; Faults in the reference run: RBX is not a valid pointer.
f:
    xor ebx, ebx
    nop
    mov rax, qword ptr [rbx]
    ret
