// An int3 (runtime.Breakpoint) with SIGTRAP also wanted by signal.Notify: the kernel's SIGTRAP (si_code
// SI_KERNEL) is not one a user sent, so the runtime throws (runtime/signal_unix.go sighandler: only a
// signal from a user, or one whose sigtable entry has _SigNotify, goes to the channel).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTRAP)
	fmt.Println("before")
	runtime.Breakpoint()
	fmt.Println("after the breakpoint: not reached")
}
