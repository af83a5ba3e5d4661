// Maps built, read, iterated and deleted from: the runtime's own map code (internal/runtime/maps,
// runtime/map_fast*.go) runs for real under preemu, with only its allocations redirected. main
// prints what each function returns natively for n = the number of arguments; the results do not
// depend on iteration order.
package main

import "os"

type node struct {
	val  int
	next *node
}

// sumByKey spreads n values over 97 keys (past one group: the map grows into a table).
//
//go:noinline
func sumByKey(n int) int {
	m := make(map[int]int)
	for i := 0; i < n; i++ {
		m[i%97] += i
	}
	t := 0
	for k, v := range m {
		t += k * v
	}
	return t*1000 + len(m)
}

// names counts string keys (runtime.strhash) and deletes every third one.
//
//go:noinline
func names(n int) int {
	m := map[string]int{}
	for i := 0; i < n; i++ {
		k := string(rune('a'+i%26)) + string(rune('A'+i%7))
		m[k]++
	}
	for i := 0; i < n; i += 3 {
		delete(m, string(rune('a'+i%26))+string(rune('A'+i%7)))
	}
	t := 0
	for k, v := range m {
		t += int(k[0]) * v
	}
	return t*1000 + len(m)
}

// chains keeps heap nodes reachable only through a map's values: a GC at any point must find
// them through the map's groups.
//
//go:noinline
func chains(n int) int {
	m := make(map[int]*node)
	for i := 0; i < n; i++ {
		m[i%13] = &node{val: i, next: m[i%13]}
	}
	t := 0
	for _, p := range m {
		for ; p != nil; p = p.next {
			t += p.val
		}
	}
	return t
}

func main() {
	n := len(os.Args) - 1 // the number of arguments: not a constant, so the compiler cannot fold the calls
	println(sumByKey(n), names(n), chains(n))
}
