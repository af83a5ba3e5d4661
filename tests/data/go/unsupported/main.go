// Calls getppid(2), a syscall preemu does not model: the run must stop with a clear error.
package main

import (
	"fmt"
	"syscall"
)

func main() {
	fmt.Println("parent", syscall.Getppid())
}
