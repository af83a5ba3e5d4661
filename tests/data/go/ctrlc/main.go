// A small program for the Ctrl-C sweep (tests/test_ctrl_c.py): quick to build (no fmt), a function to sweep
// (work), and a run long enough to be interrupted in its middle. The test builds a fresh copy each time (a
// comment changes its build key), so the sweep's `go build` is one of the moments it interrupts.
package main

import (
	"os"
	"strconv"
)

//go:noinline
func work(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

func main() {
	s := 0
	for i := 0; i < 300; i++ {
		s += work(2000)
	}
	os.Stdout.WriteString(strconv.Itoa(s) + "\n")
}
