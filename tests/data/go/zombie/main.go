// A pointer hidden as a number across a call and then stored back into the heap (issue #35): when a GC while
// spin runs has freed the list, the store resurrects a freed object, and the next cycle marks it. The
// runtime's sweeper then dies with "fatal error: found pointer to free object" (runtime/mgcsweep.go:893),
// exit status 2: the crash preemu must report in the runtime's words.
package main

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"
)

type node struct {
	v    int
	next *node
}

// mask1 and mask2 are equal at run time (set in main), so the compiler cannot cancel x ^ mask1 ^ mask2.
var mask1, mask2 uintptr

var sink *node

func makeList(n int) *node {
	var l *node
	for i := 0; i < n; i++ {
		l = &node{v: i, next: l}
	}
	return l
}

//go:noinline
func drop(l *node) {}

// spin is a call-free loop whose live variables take every general register.
//
//go:noinline
func spin(n int) int {
	a, b, c, d, e, f, g, h, k, m := 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
	for i := 0; i < n; i++ {
		a += i ^ b
		b += a >> 1
		c ^= b + d
		d += c * 3
		e ^= d >> 2
		f += e ^ g
		g ^= f << 1
		h += g ^ k
		k ^= h >> 3
		m += k ^ a
	}
	return a + b + c + d + e + f + g + h + k + m
}

//go:noinline
func zombie(n int) int {
	x := uintptr(unsafe.Pointer(makeList(8))) ^ mask1
	drop(makeList(8))
	s := spin(n)
	sink = (*node)(unsafe.Pointer(x ^ mask2))
	runtime.GC()
	return s + sink.v
}

func main() {
	mask1, mask2 = 0x5a5a5a5a5a5a5a5a, 0x5a5a5a5a5a5a5a5a
	fmt.Println("zombie", zombie(20+len(os.Args)))
}
