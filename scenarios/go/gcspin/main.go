// GC during spin: one P, a call-free spinner, and main forces a garbage collection. The GC's
// stop-the-world needs the spinner preempted (suspendG -> preemptM -> SIGURG); then main
// allocates and checks what it built survived.
package main

import (
	"fmt"
	"runtime"
	"sync/atomic"
)

type node struct {
	next *node
	val  int
}

var flag atomic.Int32

func spin() {
	for flag.Load() == 0 {
	}
}

func build(n int) *node {
	var head *node
	for i := 0; i < n; i++ {
		head = &node{head, i}
	}
	return head
}

func main() {
	runtime.GOMAXPROCS(1)
	list := build(20000)
	go spin()
	runtime.Gosched()
	runtime.GC()
	sum := 0
	for p := list; p != nil; p = p.next {
		sum += p.val
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("sum %d, gc cycles %d\n", sum, ms.NumGC)
	flag.Store(1)
}
