// An assembly pointer move without a write barrier (nowb_amd64.s), the bug only a GC cycle that runs
// while the goroutine runs can show: preemu sweep --gc=concurrent catches it, --gc=scan cannot.
//
// The holder's only reference to its node moves into the goroutine's frame with no write barrier. If the
// GC is marking, has already scanned the goroutine's stack and not yet the holder (it lies at the end of a
// long list), nothing marks the node: the cycle frees it while the frame still uses it.
//
// Natively: `prog stress 200` runs the move while another goroutine runs runtime.GC() back to back; with
// GODEBUG=gccheckmark=1 the runtime confirms it ("checkmark found unmarked object") in a share of runs.
package main

import (
	"os"
	"runtime"
	"strconv"
)

type node struct {
	v   int
	pad [3]int
}

type holder struct{ p *node }

type link struct {
	next *link
	h    *holder
}

// head is the only root of the list; the holder hangs off its last link, so the GC reaches it late.
var head *link

func take(slot **node) *node
func put(slot **node, v *node)

func build(n int) {
	l := &link{h: &holder{p: &node{v: 42}}}
	for i := 0; i < n; i++ {
		l = &link{next: l}
	}
	head = l
}

// spin is a call-free loop: the GC runs on meanwhile.
//
//go:noinline
func spin(n int) int {
	a, b := 1, 2
	for i := 0; i < n; i++ {
		a += i ^ b
		b += a >> 1
	}
	return a + b
}

// moveNoWB takes the node out of its holder (no write barrier), keeps it in its frame for n rounds of a
// call-free loop, reading it after each, and puts it back.
//
//go:noinline
func moveNoWB(n int) int {
	l := head
	for l.next != nil {
		l = l.next
	}
	p := take(&l.h.p)
	s := 0
	for i := 0; i < n; i++ {
		s += spin(100) ^ p.v
	}
	put(&l.h.p, p)
	return s
}

func main() {
	n := 3000
	if len(os.Args) > 2 && (os.Args[1] == "stress" || os.Args[1] == "stresswb") {
		iters, _ := strconv.Atoi(os.Args[2])
		move := moveNoWB
		if os.Args[1] == "stresswb" {
			move = moveWB // the correct twin: the same move in Go, with its write barriers
		}
		build(2000)
		go func() {
			for {
				runtime.GC()
			}
		}()
		for i := 0; i < iters; i++ {
			if move(200)&0 != 0 {
				println("unreachable")
			}
		}
		println("stress done")
		return
	}
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	build(1000)
	println("moveNoWB", moveNoWB(n))
}

// moveWB is moveNoWB's correct twin: the same move in Go, so the compiler's write barriers shade the node
// while the GC marks.
//
//go:noinline
func moveWB(n int) int {
	l := head
	for l.next != nil {
		l = l.next
	}
	p := l.h.p
	l.h.p = nil
	s := 0
	for i := 0; i < n; i++ {
		s += spin(100) ^ p.v
	}
	l.h.p = p
	return s
}
