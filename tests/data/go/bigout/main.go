// Writes a lot to standard output (issue #51): N MiB (the first argument, default 1024) in 64 KiB writes,
// then its count on standard error. preemu streams what it passes through instead of keeping it, so its
// memory stays bounded whatever N is.
package main

import (
	"fmt"
	"os"
	"strconv"
)

func main() {
	n := 1024
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = 'a' + byte(i%26)
	}
	chunk[len(chunk)-1] = '\n'
	for i := 0; i < n*16; i++ {
		if _, err := os.Stdout.Write(chunk); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			os.Exit(1)
		}
	}
	fmt.Fprintln(os.Stderr, "wrote", n, "MiB")
}
