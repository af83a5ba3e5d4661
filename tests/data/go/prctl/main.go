// prctl(2) as Go programs and their tests use it (issue #37 item 4): each option set reads back, the
// thread's name, the capability bounding set, seccomp off, an unknown option EINVAL. With an argument it
// also tries unshare(CLONE_NEWNS), which an unprivileged process is refused (EPERM).
package main

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

func prctl(option, arg2 uintptr) (uintptr, syscall.Errno) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, option, arg2, 0, 0, 0, 0)
	return r, e
}

func main() {
	r, e := prctl(syscall.PR_GET_KEEPCAPS, 0)
	fmt.Println("keepcaps", r, e == 0)
	_, e = prctl(syscall.PR_SET_KEEPCAPS, 1)
	r, _ = prctl(syscall.PR_GET_KEEPCAPS, 0)
	fmt.Println("keepcaps after set", r, e == 0)
	_, e = prctl(syscall.PR_SET_KEEPCAPS, 2)
	fmt.Println("keepcaps 2:", e)
	r, _ = prctl(syscall.PR_GET_DUMPABLE, 0)
	fmt.Println("dumpable", r)
	var sig int32
	prctl(syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM))
	prctl(syscall.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)))
	fmt.Println("pdeathsig", sig)
	name := []byte("worker-7\x00")
	prctl(syscall.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])))
	var got [16]byte
	prctl(syscall.PR_GET_NAME, uintptr(unsafe.Pointer(&got[0])))
	fmt.Printf("name %q\n", got[:8])
	r, _ = prctl(syscall.PR_CAPBSET_READ, 0)
	fmt.Println("capbset 0", r)
	r, _ = prctl(syscall.PR_GET_SECCOMP, 0)
	fmt.Println("seccomp", r)
	_, e = prctl(12345, 0)
	fmt.Println("unknown:", e)
	if len(os.Args) > 1 {
		fmt.Println("unshare:", syscall.Unshare(syscall.CLONE_NEWNS))
	}
}
