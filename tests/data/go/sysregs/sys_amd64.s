#include "textflag.h"

// func rawsyscall(nr uintptr) (rax, rcx, r11 uintptr)
TEXT ·rawsyscall(SB), NOSPLIT, $0-32
	MOVQ nr+0(FP), AX
	MOVQ $0, CX
	MOVQ $0, R11
	SYSCALL
	MOVQ AX, rax+8(FP)
	MOVQ CX, rcx+16(FP)
	MOVQ R11, r11+24(FP)
	RET

// func flags() uintptr
TEXT ·flags(SB), NOSPLIT, $0-8
	PUSHFQ
	POPQ AX
	MOVQ AX, ret+0(FP)
	RET
