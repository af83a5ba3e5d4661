// Functions for the real-GC sweep (preemu sweep --gc): the runtime's own collector runs a full cycle at
// every injection, and preemu watches what it freed.
package main

import (
	"fmt"
	"os"
	"unsafe"
)

type node struct {
	v    int
	next *node
}

// mask1 and mask2 are equal at run time (set in main), so the compiler cannot cancel x ^ mask1 ^ mask2.
var mask1, mask2 uintptr

// keepAddr publishes keep's object as a number, which the GC does not follow.
var keepAddr uintptr

func makeList(n int) *node {
	var l *node
	for i := 0; i < n; i++ {
		l = &node{v: i, next: l}
	}
	return l
}

// spin is a call-free loop: while it runs, its caller's frame is scanned precisely. Its ten live variables
// take every general register within one iteration, so none keeps what the caller left there.
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

// hidden keeps its only reference to a list as an XOR-masked uintptr across a call: a GC while spin runs
// frees the list, and the loop after the call reads freed memory. (go vet rejects this; the compiler does not.)
//
//go:noinline
func hidden(n int) int {
	x := uintptr(unsafe.Pointer(makeList(8))) ^ mask1
	drop(makeList(8)) // the registers the allocator leaves behind now point into this list, not the first
	s := spin(n)
	for p := (*node)(unsafe.Pointer(x ^ mask2)); p != nil; p = p.next {
		s += p.v
	}
	return s
}

// interior keeps an unsafe.Pointer into the list (unsafe.Add, which Go permits) across the same call: the
// GC follows it, and the list stays alive.
//
//go:noinline
func interior(n int) int {
	q := unsafe.Add(unsafe.Pointer(makeList(8)), 8)
	drop(makeList(8))
	s := spin(n)
	for p := (*node)(unsafe.Add(q, -8)); p != nil; p = p.next {
		s += p.v
	}
	return s
}

// churn allocates lists, map entries and growing slices, and drops most of them.
//
//go:noinline
func churn(n int) int {
	m := map[int][]int{}
	var l *node
	for i := 0; i < n; i++ {
		l = &node{v: i, next: l}
		m[i%7] = append(m[i%7], i)
		if i%5 == 0 {
			l = nil
		}
	}
	s := 0
	for _, v := range m {
		s += len(v)
	}
	for ; l != nil; l = l.next {
		s += l.v
	}
	return s
}

// sink makes keep's object escape to the heap.
var sink *node

//go:noinline
func touch() {}

// drop takes a list and lets it go.
//
//go:noinline
func drop(l *node) {}

// keep's object is dead after its last use, but its address stays in a stack slot of keep's frame: through
// keep's own loop (the innermost frame, scanned conservatively) it survives a GC; while spin runs, keep's
// frame is scanned precisely, the slot is dead, and the GC frees the object.
//
//go:noinline
func keep(n int) int {
	p := &node{v: 41}
	sink = p
	sink = nil
	keepAddr = uintptr(unsafe.Pointer(p))
	drop(makeList(2)) // p is live across these calls: the compiler spills it to a stack slot
	touch()
	s := p.v
	for i := 0; i < n; i++ {
		s += i*i ^ (s >> 3)
	}
	return s + spin(n)
}

func main() {
	mask1, mask2 = 0x5a5a5a5a5a5a5a5a, 0x5a5a5a5a5a5a5a5a
	n := 20
	if len(os.Args) > 1 {
		fmt.Sscan(os.Args[1], &n)
	}
	fmt.Println("hidden", hidden(n))
	fmt.Println("interior", interior(n))
	fmt.Println("churn", churn(n))
	fmt.Println("keep", keep(n))
}
