// A call into the heap: the bytes are a RET, but the heap is mapped without PROT_EXEC, so the fetch
// faults (the NX bit: SIGSEGV, SEGV_ACCERR, si_addr = the target) and the runtime dies with "unexpected
// fault address" and exit status 2, as natively. A world that executes data would print "after".
package main

import (
	"fmt"
	"unsafe"
)

var code = make([]byte, 64)

func main() {
	code[0] = 0xc3 // RET
	p := unsafe.Pointer(&code[0])
	fp := &p
	f := *(*func())(unsafe.Pointer(&fp)) // a func value is a pointer to a word holding the code's address
	fmt.Println("before")
	f()
	fmt.Println("after")
}
