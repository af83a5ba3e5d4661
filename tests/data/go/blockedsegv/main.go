// A nil pointer dereference with SIGSEGV blocked in the faulting thread: the kernel does not deliver
// a synchronous fault to a handler it cannot run (kernel/signal.c force_sig_info_to_task: a blocked or
// ignored forced signal gets SIG_DFL and is unblocked), so the process is killed by SIGSEGV instead
// of the runtime turning the fault into a Go panic. With the argument "pending" it first sends itself
// a SIGSEGV (tgkill) that stays pending, blocked: the fault's own is not queued twice, the pending one
// is forced and kills just the same.
package main

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

type T struct{ x, y int }

var p *T

func main() {
	runtime.LockOSThread()
	set := uint64(1) << (uint(syscall.SIGSEGV) - 1)
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, 0 /* SIG_BLOCK */, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0)
	if len(os.Args) > 1 && os.Args[1] == "pending" { // a SIGSEGV of its own already pending, blocked
		syscall.RawSyscall(syscall.SYS_TGKILL, uintptr(syscall.Getpid()), uintptr(syscall.Gettid()), uintptr(syscall.SIGSEGV))
	}
	os.Stdout.WriteString("blocked\n")
	os.Stdout.WriteString(string(rune('0' + p.y)))
}
