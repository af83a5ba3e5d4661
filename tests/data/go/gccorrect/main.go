// Correct Go code for the GC sweeps (preemu sweep --gc, both modes, both kinds of point): allocation with
// maps, channels between goroutines, sync.Pool and finalizers. Every sweep of it must be clean.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
)

type item struct {
	id   int
	tags []string
	next *item
}

//go:noinline
func maps(n int) int {
	m := map[string]*item{}
	for i := 0; i < n; i++ {
		k := strconv.Itoa(i % 17)
		m[k] = &item{id: i, tags: []string{k}, next: m[k]}
	}
	s := 0
	for _, it := range m {
		for ; it != nil; it = it.next {
			s += it.id + len(it.tags)
		}
	}
	return s
}

//go:noinline
func chans(n int) int {
	c := make(chan *item, 4)
	done := make(chan int)
	go func() {
		s := 0
		for it := range c {
			s += it.id
		}
		done <- s
	}()
	for i := 0; i < n; i++ {
		c <- &item{id: i}
	}
	close(c)
	return <-done
}

var pool = sync.Pool{New: func() any { return &item{tags: make([]string, 0, 4)} }}

//go:noinline
func pooled(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		it := pool.Get().(*item)
		it.id = i
		it.tags = append(it.tags[:0], "x")
		s += it.id + len(it.tags)
		pool.Put(it)
	}
	return s
}

var finalized int

//go:noinline
func finals(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		it := &item{id: i}
		runtime.SetFinalizer(it, func(*item) { finalized++ })
		s += it.id
	}
	return s
}

func main() {
	n := 40
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	fmt.Println("maps", maps(n))
	fmt.Println("chans", chans(n))
	fmt.Println("pooled", pooled(n))
	fmt.Println("finals", finals(n))
}
