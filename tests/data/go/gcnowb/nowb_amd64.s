#include "textflag.h"

// func take(slot **node) *node
// Returns *slot and clears it, with no write barrier: the bug. Go's compiled code would call the write
// barrier (gcWriteBarrier2) while the GC marks, which shades the old value; this move hides it.
TEXT ·take(SB), NOSPLIT, $0-16
	MOVQ slot+0(FP), AX
	MOVQ (AX), BX
	MOVQ $0, (AX)
	MOVQ BX, ret+8(FP)
	RET

// func put(slot **node, v *node)
// *slot = v, with no write barrier.
TEXT ·put(SB), NOSPLIT, $0-16
	MOVQ slot+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET
