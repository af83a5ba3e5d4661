// Fills the in-memory /tmp (issue #51): writes 1 MiB at a time to /tmp/big until a write fails, and says how
// far it got and why. Under `preemu exec --max-memory 256M` the write past the limit fails with ENOSPC, as a
// tmpfs full to its size= does natively (mm/shmem.c), and preemu's own memory stays bounded.
// `bigtmp read PATH N`: reads N MiB from the start of PATH (a huge or endless file under a mount) and prints
// how many bytes came and the sum of their values.
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
)

func read(path string, mib int) {
	f, err := os.Open(path)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	buf := make([]byte, 1<<20)
	total, sum := 0, 0
	for total < mib<<20 {
		n, err := f.Read(buf)
		for _, b := range buf[:n] {
			sum += int(b)
		}
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("read:", err)
			os.Exit(1)
		}
	}
	fmt.Println("read", total, "bytes, sum", sum)
}

func main() {
	if len(os.Args) > 3 && os.Args[1] == "read" {
		n, _ := strconv.Atoi(os.Args[3])
		read(os.Args[2], n)
		return
	}
	f, err := os.Create("/tmp/big")
	if err != nil {
		fmt.Println("create:", err)
		os.Exit(1)
	}
	chunk := make([]byte, 1<<20)
	for i := 1; i <= 4096; i++ {
		chunk[0] = byte(i)
		if _, err := f.Write(chunk); err != nil {
			fmt.Println("after", i-1, "MiB:", err)
			os.Remove("/tmp/big")
			os.Exit(3)
		}
	}
	fmt.Println("wrote 4096 MiB")
}
