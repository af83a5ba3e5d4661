// Pipes as Go uses them: os.Pipe (non-blocking, through the netpoller) read to end of file once the
// writer closes, and a raw pipe read that blocks until another goroutine writes.
package main

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

func main() {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	go func() {
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "line %d\n", i)
			time.Sleep(time.Millisecond)
		}
		w.Close()
	}()
	b, err := io.ReadAll(r) // until end of file: the write end is closed
	fmt.Printf("%q %v\n", b, err)

	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		panic(err)
	}
	go func() {
		time.Sleep(2 * time.Millisecond)
		syscall.Write(fds[1], []byte("late"))
		syscall.Close(fds[1])
	}()
	buf := make([]byte, 16)
	n, err := syscall.Read(fds[0], buf) // blocks until the writer writes
	m, err2 := syscall.Read(fds[0], buf[n:])
	fmt.Printf("%q %v %d %v\n", buf[:n], err, m, err2)
}
