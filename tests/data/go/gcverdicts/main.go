// Correct Go code that --gc once got wrong (issue #46 item 2): each function is swept with the runtime's own
// GC and must be clean. appendMap reuses spans the sweeper freed (the runtime's own writes there are not
// the program's use of freed memory); recovered panics, runtime.GC and debug.SetGCPercent inside the
// function, weak pointers and finalizers whose order a cycle's timing decides. `one` as the first argument
// runs everything with GOMAXPROCS(1).
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"weak"
)

type node struct {
	id   int
	data []byte
	next *node
}

//go:noinline
func appendMap(n int) int {
	var xs []int
	m := map[int][]byte{}
	for i := 0; i < n; i++ {
		xs = append(xs, i*i)
		m[i%13] = append(m[i%13], byte(i))
	}
	s := 0
	for _, x := range xs {
		s += x
	}
	for k, v := range m {
		s += k * len(v)
	}
	return s
}

//go:noinline
func risky(i int) (r int) {
	defer func() {
		if e := recover(); e != nil {
			r = -1
		}
	}()
	if i%5 == 0 {
		panic(fmt.Sprint("bad ", i))
	}
	return i
}

//go:noinline
func recovered(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += risky(i)
	}
	return s
}

//go:noinline
func explicitGC(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		p := &node{id: i, data: make([]byte, 64)}
		if i%10 == 0 {
			runtime.GC()
		}
		s += p.id + len(p.data)
	}
	return s
}

//go:noinline
func gcPercent(n int) int {
	old := debug.SetGCPercent(10)
	s := 0
	for i := 0; i < n; i++ {
		s += len(make([]byte, 128+i))
	}
	debug.SetGCPercent(old)
	return s
}

//go:noinline
func weakPtrs(n int) int {
	keep := make([]*node, 0, n)
	ws := make([]weak.Pointer[node], 0, n)
	for i := 0; i < n; i++ {
		p := &node{id: i}
		ws = append(ws, weak.Make(p))
		if i%2 == 0 {
			keep = append(keep, p)
		}
	}
	s := 0
	for i, w := range ws {
		if i%2 == 0 && w.Value() != nil { // the kept half is never cleared
			s += w.Value().id
		}
	}
	runtime.KeepAlive(keep)
	return s
}

var order []int

//go:noinline
func finalOrder(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		p := &node{id: i}
		runtime.SetFinalizer(p, func(q *node) { order = append(order, q.id) })
		s += p.id
	}
	return s
}

func main() {
	n := 40
	if len(os.Args) > 1 && os.Args[1] == "one" {
		runtime.GOMAXPROCS(1)
	}
	fmt.Println("appendMap", appendMap(n))
	fmt.Println("recovered", recovered(n))
	fmt.Println("explicitGC", explicitGC(n))
	fmt.Println("gcPercent", gcPercent(n))
	fmt.Println("weakPtrs", weakPtrs(n))
	fmt.Println("finalOrder", finalOrder(n))
}
