// cpus: what a program sees of the CPUs it runs on (tests/test_cpus.py).
//
//	cpus parallel  two goroutines do the same work; prints GOMAXPROCS and the virtual µs it took
//	cpus race      two goroutines count until main, after a 2 ms sleep, stops them; prints both counts
//	cpus yield     as race, on three Ps, but the first calls sched_yield between its counts
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var sink [2]uint64

//go:noinline
func work(i, n int) {
	s := uint64(i)
	for k := 0; k < n; k++ {
		s += uint64(k) ^ s>>3
	}
	sink[i] = s
}

func main() {
	switch os.Args[1] {
	case "parallel":
		start := time.Now()
		var wg sync.WaitGroup
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				work(i, 1_000_000)
			}(i)
		}
		wg.Wait()
		fmt.Println(runtime.GOMAXPROCS(0), time.Since(start).Microseconds())
	case "race":
		var stop atomic.Bool
		var c [2]atomic.Uint64
		for i := 0; i < 2; i++ {
			go func(i int) {
				for !stop.Load() {
					c[i].Add(1)
				}
			}(i)
		}
		time.Sleep(2 * time.Millisecond)
		stop.Store(true)
		fmt.Println(c[0].Load(), c[1].Load())
	case "yield":
		runtime.GOMAXPROCS(3)
		var stop atomic.Bool
		var c [2]atomic.Uint64
		go func() {
			for !stop.Load() {
				syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
				c[0].Add(1)
			}
		}()
		go func() {
			for !stop.Load() {
				c[1].Add(1)
			}
		}()
		time.Sleep(2 * time.Millisecond)
		stop.Store(true)
		fmt.Println(c[0].Load(), c[1].Load())
	}
}
