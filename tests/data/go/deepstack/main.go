// Stack growth while the runtime's map and string code holds pointers into the stack: deep(n, d)
// calls work(n) from d frames of 192 bytes down, so the 2 KiB stack grows (copystack) at a different
// place for each d -- in a prologue of mapassign_faststr, newarray, growToTable, concatstrings or
// encoderune, whose arguments (&key, the map header, the string buffer) point into the old stack,
// or in a closure's prologue, whose context register points there.
// held(n, d) grows the stack d frames below a stack object, an array of four pointers into the
// stack: copystack must adjust every pointer word of the object, not only its first.
// main prints deep(n, d), then held(n, d), for d = 0..39, n = the number of arguments.
package main

import "os"

//go:noinline
func work(n int) int {
	c := apply(n)
	m := map[string]int{}
	for i := 0; i < n; i++ {
		m[string(rune('a'+i%26))+string(rune('A'+i%11))] += i
	}
	t := 0
	for k, v := range m {
		t += int(k[0]) * v
	}
	return t + c
}

// apply calls a closure that captures a and b on the stack through its context register (RDX):
// when its prologue grows the stack, the context must move with it (adjustctxt).
//
//go:noinline
func apply(n int) int {
	a, b := n*3, n+7
	f := func(x int) int {
		var buf [40]int
		for i := range buf {
			buf[i] = x + i*a
		}
		return buf[x%40] + a*b
	}
	return call(f, n)
}

//go:noinline
func call(f func(int) int, x int) int { return f(x) + 1 }

//go:noinline
func deep(n, d int) int {
	var pad [24]int
	pad[d%24] = d
	if d > 0 {
		return deep(n, d-1) + pad[(d+1)%24]
	}
	return work(n)
}

//go:noinline
func use(a *[4]*int, d int) int {
	if d == 0 {
		return *a[0] + 10**a[1] + 100**a[2] + 1000**a[3]
	}
	var pad [24]int
	pad[d%24] = d
	return use(a, d-1) + pad[(d+1)%24]
}

//go:noinline
func held(n, d int) int {
	x, y, z, w := n+1, n+2, n+3, n+4
	a := [4]*int{&x, &y, &z, &w}
	return use(&a, d)
}

func main() {
	n := len(os.Args) - 1
	for d := 0; d < 40; d++ {
		print(deep(n, d), " ")
	}
	for d := 0; d < 40; d++ {
		print(held(n, d), " ")
	}
	println()
}
