#include "textflag.h"

// func sumAsm(n int) int
TEXT ·sumAsm(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), CX
	XORQ AX, AX
	XORQ BX, BX
loop:
	CMPQ BX, CX
	JGE done
	ADDQ BX, AX
	INCQ BX
	JMP loop
done:
	MOVQ AX, ret+8(FP)
	RET

// func addAsm(a, b int) int
TEXT ·addAsm(SB), NOSPLIT, $0-24
	MOVQ a+0(FP), AX
	ADDQ b+8(FP), AX
	MOVQ AX, ret+16(FP)
	RET
