// Package main holds the GC oracle's two real-Go cases: a function that hides its only pointer to
// a heap object in an XOR-masked integer across a loop (a GC during the loop frees the object; the
// read after the loop is a use after free), and an honest list builder (every cell stays reachable).
package main

import (
	"os"
	"unsafe"
)

type cell struct {
	next *cell
	val  int
}

var sink *cell

//go:noinline
func scramble(x, mask uintptr) uintptr { return x ^ mask }

//go:noinline
func newCell(v int) *cell { return &cell{val: v} }

// hideXor: between the two scramble calls the object is referenced by no pointer anywhere.
//
//go:noinline
func hideXor(n int, mask uintptr) int {
	h := scramble(uintptr(unsafe.Pointer(newCell(42))), mask)
	s := 0
	for i := 0; i < n; i++ {
		s += i
	}
	p := (*cell)(unsafe.Pointer(scramble(h, mask)))
	return p.val + s
}

// buildList prepends n cells, then sums them: every cell is reachable from head.
//
//go:noinline
func buildList(n int) int {
	var head *cell
	for i := 0; i < n; i++ {
		head = &cell{next: head, val: i}
	}
	s := 0
	for p := head; p != nil; p = p.next {
		s += p.val
	}
	return s
}

func main() {
	sink = newCell(1)
	println(hideXor(len(os.Args)+10, 0x5a5a5a5a5a5a5a5a), buildList(len(os.Args)+5))
}
