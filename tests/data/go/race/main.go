// A lost-update race that only a preemption exposes (issue #35). With one P, the helper goroutine runs only
// when lost or blocked: uninterrupted, F's loop finishes before the helper starts and Count is 2n. An
// asynchronous preemption between F's load and store of c.Count lets the helper run its whole loop, and F
// then stores its stale value: Count ends short. tally's result is returned and never printed;
// printed's is printed by main, so the race reaches the output too.
package main

import (
	"fmt"
	"os"
	"runtime"
)

type Counter struct {
	Name  string
	Count int
	Tags  []string
}

//go:noinline
func bump(c *Counter, n int, done chan bool) {
	for i := 0; i < n; i++ {
		c.Count++
	}
	done <- true
}

//go:noinline
func tally(n int) *Counter {
	c := &Counter{Name: "tally", Tags: []string{"a"}}
	done := make(chan bool)
	go bump(c, n, done)
	for i := 0; i < n; i++ {
		v := c.Count // a load and a store, not one read-modify-write instruction: a window
		c.Count = v + 1 + v>>62
	}
	<-done
	return c
}

//go:noinline
func printed(n int) *Counter {
	return tally(n)
}

func main() {
	runtime.GOMAXPROCS(1)
	n := 1000 + len(os.Args) - 1
	c := tally(n)
	fmt.Println("tally", c.Name, len(c.Tags))
	fmt.Println("printed", printed(n).Count)
}
