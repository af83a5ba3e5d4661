// Starvation: with one P, a call-free spinner can only be taken off the CPU by an async
// preemption (sysmon -> tgkill(SIGURG) -> sighandler -> asyncPreempt). main yields with
// runtime.Gosched and prints how long it waited before it ran again; then it lets the
// spinner finish, so the preempted goroutine resumes through asyncPreempt's return.
package main

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

var flag atomic.Int32

func spin(done chan<- bool) {
	for flag.Load() == 0 {
	}
	done <- true
}

func main() {
	runtime.GOMAXPROCS(1)
	done := make(chan bool)
	go spin(done)
	start := time.Now()
	runtime.Gosched()
	waited := time.Since(start)
	fmt.Printf("waited %d ms (%d us)\n", waited.Milliseconds(), waited.Microseconds())
	flag.Store(1)
	<-done
}
