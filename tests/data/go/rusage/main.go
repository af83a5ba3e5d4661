// getrusage(2) as Go's syscall and runtime/pprof use it (issue #50 item 3: `runtime/pprof`'s test binary
// ended on it): user time grows with work, the children's is zero before any child, a bad `who` is EINVAL.
package main

import (
	"fmt"
	"syscall"
)

func work(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

func main() {
	var a, b, c syscall.Rusage
	fmt.Println("self", syscall.Getrusage(syscall.RUSAGE_SELF, &a))
	work(3_000_000)
	syscall.Getrusage(syscall.RUSAGE_SELF, &b)
	fmt.Println("grew", b.Utime.Nano()+b.Stime.Nano() > a.Utime.Nano()+a.Stime.Nano())
	fmt.Println("children", syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c), c.Utime.Nano())
	fmt.Println("maxrss", b.Maxrss > 0)
	fmt.Println("bad", syscall.Getrusage(7, &c))
}
