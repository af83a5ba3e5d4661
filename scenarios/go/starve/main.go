// Starvation: with one P, a call-free spinner can only be taken off the CPU by an async
// preemption (sysmon -> tgkill(SIGURG) -> sighandler -> asyncPreempt). main yields with
// runtime.Gosched and prints how long it waited before it ran again.
package main

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

var flag atomic.Int32

func spin() {
	for flag.Load() == 0 {
	}
}

func main() {
	runtime.GOMAXPROCS(1)
	go spin()
	start := time.Now()
	runtime.Gosched()
	waited := time.Since(start)
	fmt.Printf("waited %d ms (%d us)\n", waited.Milliseconds(), waited.Microseconds())
	flag.Store(1)
}
