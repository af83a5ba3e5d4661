// Allocates forever, keeping everything (issue #37): under `preemu exec --max-memory 256M` mmap fails with
// ENOMEM past the limit and the runtime ends the program with its own "fatal error: out of memory" (exit 2),
// as under a memory cgroup's limit natively.
package main

import "fmt"

var kept [][]byte

func main() {
	for i := 0; ; i++ {
		b := make([]byte, 4<<20)
		b[0] = byte(i)
		kept = append(kept, b)
		if i%16 == 0 {
			fmt.Println("allocated", (i+1)*4, "MiB")
		}
	}
}
