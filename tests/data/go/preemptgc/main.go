// TestPreemptionGC in the style of runtime/proc_test.go: spinners on every P but one while the GC runs
// (each GC must preempt them to stop the world). GOMAXPROCS is the first argument (default 4).
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
)

func main() {
	procs := 4
	if len(os.Args) > 1 {
		procs, _ = strconv.Atoi(os.Args[1])
	}
	const numGCs = 20
	workers := procs - 1
	runtime.GOMAXPROCS(procs)
	var stop atomic.Bool
	done := make(chan bool)
	for i := 0; i < workers; i++ {
		go func() {
			for !stop.Load() {
			}
			done <- true
		}()
	}
	for i := 0; i < numGCs; i++ {
		runtime.GC()
	}
	stop.Store(true)
	for i := 0; i < workers; i++ {
		<-done
	}
	fmt.Println("ok", numGCs, "GCs with", workers, "spinners")
}
