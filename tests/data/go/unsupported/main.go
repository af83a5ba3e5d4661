// Calls acct(2) (process accounting), a syscall preemu does not model: the run must stop with a clear error.
package main

import (
	"fmt"
	"syscall"
)

func main() {
	_, _, e := syscall.Syscall(syscall.SYS_ACCT, 0, 0, 0)
	fmt.Println("acct", e)
}
