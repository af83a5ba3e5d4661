// Ways a Go program ends badly, one per argument, for emu/goruntime/crashtext.py (tests/test_verdicts.py):
// the runtime's own words on stderr (panic.go printpanics, throw/fatal, dopanic_m's [signal ...] line,
// traceback.go's goroutine header and frames) or a death by a signal with nothing said.
package main

import (
	"fmt"
	"os"
	"sync"
	"syscall"
)

var p *struct{ x, y int }

//go:noinline
func level2(mode string) {
	switch mode {
	case "panic":
		panic(fmt.Sprintf("boom %d", 7))
	case "nil":
		fmt.Println(p.y)
	case "throw":
		var mu sync.Mutex
		mu.Unlock() // fatal error: sync: unlock of unlocked mutex
	case "repanic":
		defer func() { panic(recover()) }()
		panic("again")
	case "nested":
		defer func() { panic("second") }()
		panic("first")
	case "fatalinpanic": // panic: first, then fatal error (printPreFatalDeferPanic indents it)
		defer func() {
			var mu sync.Mutex
			mu.Unlock()
		}()
		panic("first")
	case "deadlock":
		<-make(chan int)
	case "goroutine":
		done := make(chan bool)
		go func() {
			defer close(done)
			var m map[string]int
			m["x"] = 1 // panic: assignment to entry in nil map
		}()
		<-done
	case "kill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "spin":
		for n := 0; ; n++ {
			if n < 0 {
				break
			}
		}
	case "exit":
		fmt.Fprintln(os.Stderr, "usage: crashes MODE")
		os.Exit(3)
	}
}

//go:noinline
func level1(mode string) { level2(mode) }

func main() {
	fmt.Println("start")
	if len(os.Args) > 1 {
		level1(os.Args[1])
	}
	fmt.Println("end")
}
