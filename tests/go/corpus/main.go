// Package main is preemu's Go corpus: one //go:noinline function per shape the
// preemption emulator must handle, each called from main so the linker keeps it.
package main

import (
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Node is a list cell: two pointer words then a scalar (GC mask 0b011).
type Node struct {
	next *Node
	name *byte
	val  int
}

// Big has more than 128 pointer words, so its type uses an on-demand GC mask.
type Big struct {
	ptrs [130]*Node
	n    int
	tail *Node
}

var (
	sink     *Node
	sinkBig  *Big
	sinkAny  any
	counter  uint32
	table    = [4]*Node{}
	greeting = "hello"
)

// sumsq is a call-free loop: the compiler makes it a frameless leaf.
//
//go:noinline
func sumsq(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i
	}
	return s
}

// buildList appends n cells at the tail: allocation plus pointer stores
// into existing heap objects (write barriers that record old and new values).
//
//go:noinline
func buildList(n int) *Node {
	head := &Node{val: 0}
	tail := head
	for i := 1; i < n; i++ {
		nd := &Node{val: i}
		tail.next = nd
		tail = nd
	}
	return head
}

// honestList builds a list by prepending and then walks it: every cell stays
// reachable from a live local, so a precise GC must keep all of them.
//
//go:noinline
func honestList(n int) int {
	var head *Node
	for i := 0; i < n; i++ {
		head = &Node{next: head, val: i}
	}
	s := 0
	for p := head; p != nil; p = p.next {
		s += p.val
	}
	return s
}

// newNode returns a heap cell (it escapes through the result).
//
//go:noinline
func newNode(v int) *Node {
	return &Node{val: v}
}

// xorKey returns the mask hideXor applies; being a call, the compiler cannot
// cancel the two XORs and keep the plain pointer in a register.
//
//go:noinline
func xorKey() uintptr {
	return 0x5a5a5a5a5a5a5a5a
}

// hideXor keeps its only reference to a heap cell XOR-masked in an integer
// while the loop runs, so the GC cannot see it: a GC during the loop frees
// the cell and the final read is a use after free.
//
//go:noinline
func hideXor(n int) int {
	m := xorKey()
	h := uintptr(unsafe.Pointer(newNode(42))) ^ m
	s := 0
	for i := 0; i < n; i++ {
		s += i
	}
	p := (*Node)(unsafe.Pointer(h ^ xorKey()))
	return p.val + s
}

// nosplitAdd is marked //go:nosplit: the whole body is an unsafe point.
//
//go:nosplit
//go:noinline
func nosplitAdd(a, b int) int {
	return a + b
}

// bigFrame has a 32 KiB local array: the prologue compares against a
// computed bound instead of stackguard0 alone.
//
//go:noinline
func bigFrame(n int) int {
	var buf [4096]int
	for i := 0; i < n && i < len(buf); i++ {
		buf[i] = i * 3
	}
	s := 0
	for i := range buf {
		s += buf[i]
	}
	return s
}

// atomicOr ORs bits into *p in a loop (LOCK ORL).
//
//go:noinline
func atomicOr(p *uint32, n int) {
	for i := 0; i < n; i++ {
		atomic.OrUint32(p, 1<<(uint(i)&31))
	}
}

// numCPUs calls runtime.NumCPU, which the compiler inlines: those
// instructions belong to package runtime in the inline tree.
//
//go:noinline
func numCPUs(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += runtime.NumCPU()
	}
	return s
}

func small(x int) int { return x*7 + 1 }

// inlineCaller has two inlined calls of main.small.
//
//go:noinline
func inlineCaller(a, b int) int {
	return small(a) * small(b)
}

// makeBig allocates a type with an on-demand GC mask.
//
//go:noinline
func makeBig() *Big {
	b := &Big{n: 1}
	b.tail = b.ptrs[0]
	return b
}

// readVal only reads through its argument, so the argument does not escape.
//
//go:noinline
func readVal(p *Node) int {
	return p.val
}

// stackObject keeps an address-taken, non-escaping Node on its stack: a
// stack object the GC scans through its type's mask.
//
//go:noinline
func stackObject(n int) int {
	var nd Node
	nd.next = sink
	nd.val = n
	return readVal(&nd)
}

func main() {
	n := len(os.Args) + 9
	s := sumsq(n)
	sink = buildList(n)
	s += honestList(n)
	s += hideXor(n)
	s += nosplitAdd(s, n)
	s += bigFrame(n)
	atomicOr(&counter, n)
	s += numCPUs(n)
	s += inlineCaller(s, n)
	sinkBig = makeBig()
	s += stackObject(n)
	sinkAny = s
	table[1] = sink
	if s == 0 {
		println(greeting)
	}
	os.Exit(int(counter & 1))
}
