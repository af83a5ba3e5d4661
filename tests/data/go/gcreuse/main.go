// A stale pointer read after its slot was reused (issue #46 item 2): reuse hides its object's address as a
// masked uintptr, allocates objects of the same size class, then reads through the hidden address. Natively
// the read is right unless a cycle ran in the window: then the freed slot is reallocated and the read returns
// the new object's word (`prog stress N` forces that cycle with runtime.GC(); see the corpus note). Under
// `preemu sweep --gc`, the quarantine keeps the freed slot out of reuse, so the read is a use-after-free.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"unsafe"
)

// mask1 and mask2 are equal at run time (set in main), so the compiler cannot cancel x ^ mask1 ^ mask2.
var mask1, mask2 uintptr

var escape *[4]int
var kept []*[4]int

//go:noinline
func fill(n int) {
	kept = kept[:0]
	for i := 0; i < n; i++ {
		q := new([4]int)
		q[0] = -1
		kept = append(kept, q)
	}
}

//go:noinline
func reuse(n int, collect bool) int {
	p := new([4]int)
	escape = p // on the heap: the compiler would keep a non-escaping one on the stack
	escape = nil
	p[0] = 42
	h := uintptr(unsafe.Pointer(p)) ^ mask1
	p = nil
	s := 0
	for i := 0; i < n; i++ { // a call-free window: an asynchronous preemption lands here
		s += i * i
	}
	if collect {
		runtime.GC()
	}
	fill(600)
	v := (*[4]int)(unsafe.Pointer(h ^ mask2))[0]
	return v + s - s
}

func main() {
	mask1 = 0x5a5a5a5a5a5a5a5a
	mask2 = mask1
	if len(os.Args) > 2 && os.Args[1] == "stress" {
		n, _ := strconv.Atoi(os.Args[2])
		wrong := 0
		for i := 0; i < n; i++ {
			if reuse(50, true) != 42 {
				wrong++
			}
		}
		fmt.Println("wrong", wrong, "of", n)
		return
	}
	fmt.Println("reuse", reuse(300, false))
}
