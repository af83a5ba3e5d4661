#include "textflag.h"

// func viaAligned(n int) int
// Calls visit(n) with SP rounded down to 16 bytes (as code that calls C does), the old SP saved in the new
// frame. Writing SP makes this an SPWRITE function: the unwinder cannot find its caller, so a stack scan or
// traceback while visit runs throws ("traceback: unexpected SPWRITE function"). The bug: calling Go code
// from a frame the runtime cannot unwind.
TEXT ·viaAligned(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), AX
	MOVQ SP, BX
	SUBQ $32, SP
	ANDQ $~15, SP
	MOVQ BX, 16(SP)
	MOVQ AX, 0(SP)
	CALL ·visit(SB)
	MOVQ 8(SP), AX
	MOVQ 16(SP), SP
	MOVQ AX, ret+8(FP)
	RET
