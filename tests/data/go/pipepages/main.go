// pipepages: a pipe holds 64 KiB, as fs/pipe.c's: a non-blocking write takes what fits and then EAGAIN, a
// write of at most PIPE_BUF goes in whole or not at all, a blocking writer (a child's stdout) waits for the
// reader, and os's TestClosedPipeRaceWrite case: a write larger than the pipe, its write end closed by
// another goroutine while it waits, fails with os.ErrClosed (tests/test_pipes.py compares with a native run).
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if os.Getenv("PIPEFULL_CHILD") != "" {
		os.Stdout.Write(bytes.Repeat([]byte("x"), 300000))
		return
	}
	var fds [2]int
	syscall.Pipe2(fds[:], syscall.O_NONBLOCK)
	n, err := syscall.Write(fds[1], make([]byte, 100000))
	fmt.Println("non-blocking write of 100000:", n, err)
	n, err = syscall.Write(fds[1], make([]byte, 10))
	fmt.Println("then 10 more:", n, err)
	buf := make([]byte, 5000)
	n, _ = syscall.Read(fds[0], buf)
	fmt.Println("read", n)
	n, err = syscall.Write(fds[1], make([]byte, 4096))
	fmt.Println("PIPE_BUF fits whole:", n, err)
	n, err = syscall.Write(fds[1], make([]byte, 4096))
	fmt.Println("the next PIPE_BUF does not fit, so none of it:", n, err)
	n, err = syscall.Write(fds[1], make([]byte, 5000))
	fmt.Println("a longer one takes what fits:", n, err)
	syscall.Close(fds[0])
	syscall.Close(fds[1])

	out, err := func() ([]byte, error) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{"PIPEFULL_CHILD=1"}
		return cmd.Output()
	}()
	fmt.Println("a child's 300000 bytes through its stdout pipe:", len(out), err)

	r, w, _ := os.Pipe()
	done := make(chan int)
	go func() {
		b, _ := io.ReadAll(r)
		done <- len(b)
	}()
	n, err = w.Write(make([]byte, 200000))
	w.Close()
	fmt.Println("os.Pipe write of 200000:", n, err, "read:", <-done)

	r, w, _ = os.Pipe()
	go func() {
		time.Sleep(20 * time.Millisecond)
		w.Close()
	}()
	_, err = w.Write(make([]byte, 131073))
	fmt.Println("a write its end's close cuts short:", errors.Is(err, os.ErrClosed))
	r.Close()
}
