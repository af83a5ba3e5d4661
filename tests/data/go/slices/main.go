// Slices made and grown on the heap: runtime.makeslice and runtime.growslice (runtime/slice.go),
// with capacities rounded up to the runtime's size classes. main prints what each function returns
// natively, so a test can compare preemu's runs of the same functions with the real runtime's.
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

func main() {
	n := 10 + len(os.Args) // not a constant: the compiler cannot fold the calls
	println(fill(n), growPtrs(n), growBytes(10*n), growTriples(n))
}
