// time.Now in a loop (bench/bench_exec.py, issue #22): with an argument, the same loop without the calls.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	const n = 200000
	start := time.Now()
	var s int64
	if len(os.Args) > 1 {
		for i := 0; i < n; i++ {
			s += int64(i) ^ (s >> 3)
		}
	} else {
		for i := 0; i < n; i++ {
			s += time.Now().UnixNano() & 7
		}
	}
	fmt.Println(s != 42, time.Since(start) > 0)
}
