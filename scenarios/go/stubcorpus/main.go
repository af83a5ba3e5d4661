// The real-program part of `preemu check-stub`: Go loops that keep every kind of register live, swept in
// this program (built with the project's Go toolchain) with the stub under test loaded over the binary's
// runtime.asyncPreempt.
package main

import (
	"fmt"
	"math"
)

type node struct {
	v    int
	next *node
}

// spin keeps ten integer variables live in general registers.
//
//go:noinline
func spin(n int) int {
	r1, r2, r3, r4, r5, r6, r7, r8, r9, r10 := 3, 5, 7, 11, 13, 17, 19, 23, 29, 31
	for i := 1; i <= n; i++ {
		r1 ^= i * r10
		r2 -= r1 >> 2
		r3 += r2 ^ r4
		r4 ^= r3 * 5
		r5 -= r4 >> 1
		r6 ^= r5 + r7
		r7 += r6 << 2
		r8 -= r7 ^ r9
		r9 += r8 >> 4
		r10 ^= r9 - r1
	}
	return r1 ^ r2 ^ r3 ^ r4 ^ r5 ^ r6 ^ r7 ^ r8 ^ r9 ^ r10
}

// floats keeps floating-point values live in XMM registers.
//
//go:noinline
func floats(n int) float64 {
	x, y, z, w := 0.5, 1.25, 2.0, 3.5
	for i := 0; i < n; i++ {
		x = x*1.0001 + y
		y = math.Sqrt(y*y+z) - w*0.001
		z = z*0.999 + x*0.0001
		w += x - y
	}
	return x + y + z + w
}

// compare branches on comparisons: the flags are live between a CMP and its jump.
//
//go:noinline
func compare(xs []int) int {
	lo, hi, c := 0, 0, 0
	for _, x := range xs {
		if x < lo {
			lo = x
		}
		if x > hi {
			hi = x
		}
		if x&1 == 0 {
			c++
		}
	}
	return lo + hi*3 + c
}

// calls calls a small function: prologues and their stack checks.
//
//go:noinline
func calls(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += square(i) ^ s
	}
	return s
}

//go:noinline
func square(x int) int { return x*x + 1 }

// walk follows pointers: registers hold heap pointers.
//
//go:noinline
func walk(l *node) int {
	s := 0
	for p := l; p != nil; p = p.next {
		s += p.v ^ (s >> 2)
	}
	return s
}

func main() {
	xs := make([]int, 40)
	for i := range xs {
		xs[i] = (i*37)%23 - 11
	}
	var l *node
	for i := 0; i < 20; i++ {
		l = &node{v: i * 3, next: l}
	}
	fmt.Println(spin(20), floats(20), compare(xs), calls(15), walk(l))
}
