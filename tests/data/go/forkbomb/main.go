// Many processes or many threads (issue #51). `forkbomb procs`: every process starts copies of itself (os/exec
// of os.Args[0]) that do the same, until a start fails; each reports that failure on standard output ("start:
// fork/exec ...: resource temporarily unavailable" at the process limit, as pids.max gives EAGAIN natively,
// kernel/cgroup/pids.c) and then waits for its children. `forkbomb threads`: goroutines each locked to an
// OS thread blocked in a sleep, until the runtime cannot create one more thread and ends the program
// ("runtime: failed to create new OS thread", exit 2).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

func procs() {
	var kids []*exec.Cmd
	for i := 0; i < 2; i++ {
		c := exec.Command(os.Args[0], "procs")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		if err := c.Start(); err != nil {
			fmt.Println("start:", err)
			break
		}
		kids = append(kids, c)
	}
	for _, c := range kids {
		c.Wait()
	}
}

func threads() {
	var mu sync.Mutex
	n := 0
	for i := 0; i < 100000; i++ {
		go func() {
			runtime.LockOSThread()
			mu.Lock()
			n++
			if n%64 == 0 {
				fmt.Println(n, "threads")
			}
			mu.Unlock()
			for {
				syscall.Nanosleep(&syscall.Timespec{Sec: 3600}, nil)
			}
		}()
		time.Sleep(time.Millisecond)
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "threads" {
		threads()
		return
	}
	procs()
	if os.Getppid() == 1 || os.Getenv("FORKBOMB_TOP") != "" {
		fmt.Println("done")
	}
}
