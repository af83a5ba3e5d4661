// Calls getpgrp() (getpgid(0) in Go), a syscall preemu does not model: the run must stop with a clear error.
package main

import (
	"fmt"
	"syscall"
)

func main() {
	fmt.Println("group", syscall.Getpgrp())
}
