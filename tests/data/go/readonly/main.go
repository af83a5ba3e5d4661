// Page protections as Linux enforces them (issue #37): a store to memory mapped PROT_READ, to memory
// mprotect'ed read-only, and to the binary's read-only data faults (SIGSEGV, SEGV_ACCERR); after mprotect
// back to PROT_READ|PROT_WRITE the store succeeds. debug.SetPanicOnFault turns each fault into a panic the
// program recovers, with the faulting address, so the output can be compared with a native run.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
	"unsafe"
)

var greeting = "read-only data"

// store writes v at p and says what happened: the fault's offset from base, or that the store went through.
//
//go:noinline
func store(what string, base, p unsafe.Pointer, v byte) {
	defer func() {
		r := recover()
		if e, ok := r.(interface{ Addr() uintptr }); ok {
			fmt.Printf("%s: fault at +%d\n", what, e.Addr()-uintptr(base))
		} else if r != nil {
			fmt.Printf("%s: %v\n", what, r)
		}
	}()
	*(*byte)(p) = v
	fmt.Printf("%s: stored\n", what)
}

func main() {
	debug.SetPanicOnFault(true)
	ro, err := syscall.Mmap(-1, 0, 8192, syscall.PROT_READ, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	base := unsafe.Pointer(&ro[0])
	store("mmap PROT_READ", base, unsafe.Add(base, 4100), 1)

	rw, err := syscall.Mmap(-1, 0, 8192, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	base = unsafe.Pointer(&rw[0])
	store("mmap PROT_READ|PROT_WRITE", base, unsafe.Add(base, 10), 7)
	if err := syscall.Mprotect(rw[4096:], syscall.PROT_READ); err != nil {
		panic(err)
	}
	store("first page, still writable", base, unsafe.Add(base, 11), 8)
	store("second page, mprotect PROT_READ", base, unsafe.Add(base, 5000), 9)
	if err := syscall.Mprotect(rw, syscall.PROT_READ|syscall.PROT_WRITE); err != nil {
		panic(err)
	}
	store("mprotect back to PROT_READ|PROT_WRITE", base, unsafe.Add(base, 5000), 9)
	fmt.Println("values", rw[10], rw[11], rw[5000], ro[4100])

	s := unsafe.StringData(greeting)
	store("the binary's read-only data", unsafe.Pointer(s), unsafe.Add(unsafe.Pointer(s), 3), 'X')
	fmt.Println(greeting)
	if len(os.Args) > 1 { // crash: the runtime's own report of the fault (signal, code=0x2 SEGV_ACCERR, addr)
		debug.SetPanicOnFault(false)
		*(*byte)(unsafe.Add(unsafe.Pointer(s), 5)) = 'Y'
	}
}
