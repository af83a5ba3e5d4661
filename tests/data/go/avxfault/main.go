// AVX loads and stores against page protections (issue #46): built for GOAMD64=v3/v4, the runtime's memmove
// and memclr move more than 256 bytes with VMOVDQU/VMOVDQA, which preemu executes itself. A store to a
// read-only page and a load from an unmapped one must fault (SIGSEGV) with nothing written, as natively;
// debug.SetPanicOnFault turns each fault into a panic the program recovers, printing the faulting address
// and what the destination holds afterwards, so the output can be compared with a native run.
package main

import (
	"fmt"
	"runtime/debug"
	"syscall"
	"unsafe"
)

const page = 4096

// try runs f and says where it faulted (relative to base), or that it did not.
func try(what string, base unsafe.Pointer, f func()) {
	defer func() {
		r := recover()
		if e, ok := r.(interface{ Addr() uintptr }); ok {
			fmt.Printf("%s: fault at %+d\n", what, int(e.Addr()-uintptr(base)))
		} else if r != nil {
			fmt.Printf("%s: %v\n", what, r)
		}
	}()
	f()
	fmt.Printf("%s: no fault\n", what)
}

// count says how many bytes of b are not v.
func count(b []byte, v byte) int {
	n := 0
	for _, x := range b {
		if x != v {
			n++
		}
	}
	return n
}

func main() {
	debug.SetPanicOnFault(true)
	src := make([]byte, 2*page)
	for i := range src {
		src[i] = byte(i%251 + 1)
	}
	// three pages: unmapped (PROT_NONE), writable, read-only (filled with 0xEE first)
	// (the raw system call: syscall.Mmap keeps a map of its mappings, whose hashing at v3 is VAESENC, which
	// preemu does not execute)
	addr, _, errno := syscall.Syscall6(syscall.SYS_MMAP, 0, 3*page, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE, ^uintptr(0), 0)
	if errno != 0 {
		panic(errno)
	}
	base := unsafe.Pointer(addr)
	m := unsafe.Slice((*byte)(base), 3*page)
	for i := 2 * page; i < 3*page; i++ {
		m[i] = 0xEE
	}
	if err := syscall.Mprotect(m[:page], syscall.PROT_NONE); err != nil {
		panic(err)
	}
	if err := syscall.Mprotect(m[2*page:], syscall.PROT_READ); err != nil {
		panic(err)
	}
	rw, ro := m[page:2*page], m[2*page:]

	try("copy 512 bytes into the read-only page", base, func() { copy(ro[64:64+512], src) })
	fmt.Println("  read-only page changed:", count(ro, 0xEE))
	try("copy 512 bytes across into the read-only page", base, func() { copy(m[2*page-200:2*page+312], src) })
	fmt.Println("  writable page got:", count(rw, 0), "read-only page changed:", count(ro, 0xEE))
	try("clear 1024 bytes of the read-only page", base, func() { clear(ro[32 : 32+1024]) })
	fmt.Println("  read-only page changed:", count(ro, 0xEE))
	dst := make([]byte, 2*page)
	try("copy 600 bytes from across the unmapped page", base, func() { copy(dst, m[page-200:page+400]) })
	fmt.Println("  destination got:", count(dst, 0))
	fmt.Println("done")
}
