// Maps built, read, iterated and deleted from: the runtime's own map code (internal/runtime/maps,
// runtime/map_fast*.go) runs for real under preemu, with only its allocations redirected. main
// prints what each function returns natively for n = the number of arguments; the results do not
// depend on iteration order.
package main

import (
	"os"
	"unsafe"
)

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

// pairs keys a map by [2]int values whose first word is always 0: 16-byte keys hashed by
// memHashFallback, which is keyed by hashkey (runtime.init sets it at random; never zero).
//
//go:noinline
func pairs(n int) int {
	m := make(map[[2]int]int)
	for i := 0; i < n; i++ {
		m[[2]int{0, i}] = i
	}
	t := 0
	for k, v := range m {
		t += k[1] + v
	}
	return t*1000 + len(m)
}

// floats keys a map by float64 values, some of them repeated (runtime.f64hash and f64equal).
//
//go:noinline
func floats(n int) int {
	m := make(map[float64]int)
	for i := 0; i < n; i++ {
		m[float64(i%17)/4]++
	}
	t := 0.0
	for k, v := range m {
		t += k * float64(v)
	}
	return int(t*100) + len(m)
}

// anys keys a map by interface values of three dynamic types (runtime.nilinterhash, efaceeq).
//
//go:noinline
func anys(n int) int {
	m := make(map[any]int)
	for i := 0; i < n; i++ {
		switch i % 3 {
		case 0:
			m[i%5]++
		case 1:
			m[string(rune('a'+i%4))]++
		default:
			m[[2]int{i % 2, 7}]++
		}
	}
	return len(m)*1000 + m[0] + m["a"]
}

// spin is a call-free loop: while it runs, holder's frame is a caller frame, scanned precisely.
//
//go:noinline
func spin(n int) int {
	t := 0
	for i := 0; i < 50*n; i++ {
		t += i & 7
	}
	return t
}

// holder's map does not escape: its header and first group are a stack object of holder's frame,
// and the nodes are reachable only through it while spin runs (a GC must scan the stack object).
//
//go:noinline
func holder(n int) int {
	m := map[int]*node{}
	for i := 0; i < 4; i++ {
		m[i] = &node{val: i + n}
	}
	s := spin(n)
	t := 0
	for _, p := range m {
		t += p.val
	}
	return t*100000 + s
}

type rec struct {
	u uintptr
	p *node
}

//go:noinline
func mk(v int) *node { return &node{val: v} }

//go:noinline
func spinRec(r *rec, n int) int {
	t := 0
	for i := 0; i < 50*n; i++ {
		t += i & 7
	}
	return t + r.p.val
}

// hidden keeps one node through a pointer and one only as a uintptr in a stack object that spinRec
// reaches through a register: scanned conservatively by its mask, the object shows the GC only its
// pointer word, so the uintptr's node is garbage (scanConservative honours the mask).
//
//go:noinline
func hidden(n int) int {
	var r rec
	r.p = mk(n)
	r.u = uintptr(unsafe.Pointer(mk(2 * n)))
	return spinRec(&r, n)
}

func main() {
	n := len(os.Args) - 1 // the number of arguments: not a constant, so the compiler cannot fold the calls
	println(sumByKey(n), names(n), chains(n), pairs(n), floats(n), anys(n), holder(n), hidden(n))
}
