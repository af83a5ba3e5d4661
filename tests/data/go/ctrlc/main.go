// A small program for the Ctrl-C sweep (tests/test_ctrl_c.py): quick to build (no fmt), a function to sweep
// (work), and a run long enough to be interrupted in its middle. The test builds a fresh copy each time (a
// comment changes its build key), so the sweep's `go build` is one of the moments it interrupts.
package main

import (
	"os"
	"strconv"
)

//go:noinline
func work(n int) (s int) {
	for i := n; i > 0; i-- {
		s ^= i<<1 + s>>3
	}
	return
}

func main() {
	s := 0
	for i := 0; i < 300; i++ {
		s += work(2000)
	}
	os.Stdout.WriteString(strconv.Itoa(s) + "\n")
}
