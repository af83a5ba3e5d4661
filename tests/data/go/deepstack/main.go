// Stack growth while the runtime's map and string code holds pointers into the stack: deep(n, d)
// calls work(n) from d frames of 192 bytes down, so the 2 KiB stack grows (copystack) at a different
// place for each d -- in a prologue of mapassign_faststr, newarray, growToTable, concatstrings or
// encoderune, whose arguments (&key, the map header, the string buffer) point into the old stack.
// main prints deep(n, d) for d = 0..39, n = the number of arguments.
package main

import "os"

//go:noinline
func work(n int) int {
	m := map[string]int{}
	for i := 0; i < n; i++ {
		m[string(rune('a'+i%26))+string(rune('A'+i%11))] += i
	}
	t := 0
	for k, v := range m {
		t += int(k[0]) * v
	}
	return t
}

//go:noinline
func deep(n, d int) int {
	var pad [24]int
	pad[d%24] = d
	if d > 0 {
		return deep(n, d-1) + pad[(d+1)%24]
	}
	return work(n)
}

func main() {
	n := len(os.Args) - 1
	for d := 0; d < 40; d++ {
		print(deep(n, d), " ")
	}
	println()
}
