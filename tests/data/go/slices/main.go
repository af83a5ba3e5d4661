// Slices made and grown on the heap: runtime.makeslice and runtime.growslice (runtime/slice.go),
// with capacities rounded up to the runtime's size classes, and the moves of a slice grown in a stack
// buffer to the heap (moveSlice*, runtime/slice.go). main prints what each function returns natively
// for n = the number of arguments, so a test can compare preemu's runs with the real runtime's.
package main

import "os"

// fill makes a slice of n ints (a non-constant length: makeslice) and sums their squares.
//
//go:noinline
func fill(n int) int {
	s := make([]int, n)
	for i := range s {
		s[i] = i * i
	}
	t := 0
	for _, v := range s {
		t += v
	}
	return t
}

// growPtrs appends n pointers to fresh ints (growslice of a pointerful element: the GC must find
// every cell through the slice) and returns their sum plus the final capacity times 1000.
//
//go:noinline
func growPtrs(n int) int {
	var s []*int
	for i := 0; i < n; i++ {
		v := i
		s = append(s, &v)
	}
	t := 0
	for _, p := range s {
		t += *p
	}
	return t + 1000*cap(s)
}

// growBytes appends n bytes (growslice of 1-byte elements: capacities are size classes).
//
//go:noinline
func growBytes(n int) int {
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, byte(i))
	}
	return 1000*len(b) + cap(b)
}

// growTriples appends n 24-byte structs (an element size that is not a power of two).
//
//go:noinline
func growTriples(n int) int {
	type triple struct{ a, b, c int }
	var s []triple
	for i := 0; i < n; i++ {
		s = append(s, triple{i, 2 * i, 3 * i})
	}
	t := 0
	for _, x := range s {
		t += x.a + x.b + x.c
	}
	return t + 1000*cap(s)
}

// collect returns what it appends: the slice grown in a stack buffer moves to the heap on the way
// out (moveSliceNoScan / moveSliceNoCapNoScan).
//
//go:noinline
func collect(n int) []int {
	var s []int
	for i := 0; i < n; i++ {
		s = append(s, 3*i)
	}
	return s
}

// collectPtrs is collect for pointers (moveSlice / moveSliceNoCap).
//
//go:noinline
func collectPtrs(n int) []*int {
	var s []*int
	for i := 0; i < n; i++ {
		v := 5 * i
		s = append(s, &v)
	}
	return s
}

// moved sums what collect and collectPtrs return, with their lengths and capacities.
//
//go:noinline
func moved(n int) int {
	a, p := collect(n), collectPtrs(n)
	t := 0
	for i := range a {
		t += a[i] + *p[i]
	}
	return t + 1000*(cap(a)+len(a)) + 100000*cap(p)
}

var (
	keep      []*int
	keepBytes []byte
)

// copied makes slices by copying (makeslicecopy), kept in globals: a []byte 5 longer than its source
// and a []*int as long as its source.
//
//go:noinline
func copied(n int) int {
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i)
	}
	keepBytes = make([]byte, n+5)
	copy(keepBytes, src)
	dst := keepBytes
	ptrs := make([]*int, n)
	for i := range ptrs {
		v := i
		ptrs[i] = &v
	}
	keep = make([]*int, len(ptrs))
	copy(keep, ptrs)
	t := 0
	for i := range dst {
		t += int(dst[i])
	}
	for _, p := range keep {
		t += *p
	}
	return t + 1000*cap(dst)
}

func main() {
	n := len(os.Args) - 1 // the number of arguments: not a constant, so the compiler cannot fold the calls
	println(fill(n), growPtrs(n), growBytes(10*n), growTriples(n), moved(n), copied(n))
}
