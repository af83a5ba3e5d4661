// writev: writev(2) and readv(2) as Linux has them: net.Buffers' WriteTo on a TCP connection (one writev, as
// net's tests make it), a writev of three buffers into a pipe read back in order, a readv (preemu fills only
// the first non-empty iovec: here all fits it), EINVAL past
// UIO_MAXIOV (tests/test_pipes.py compares with a native run).
package main

import (
	"fmt"
	"io"
	"net"
	"syscall"
	"unsafe"
)

func iovecs(bufs ...[]byte) []syscall.Iovec {
	out := make([]syscall.Iovec, len(bufs))
	for i, b := range bufs {
		if len(b) > 0 {
			out[i].Base = &b[0]
		}
		out[i].SetLen(len(b))
	}
	return out
}

func vec(nr uintptr, fd int, iov []syscall.Iovec) (int, syscall.Errno) {
	n, _, e := syscall.Syscall(nr, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
	return int(n), e
}

func main() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan bool)
	go func() {
		defer close(done)
		c, _ := ln.Accept()
		b, _ := io.ReadAll(c)
		fmt.Printf("server read %q\n", b)
		c.Close()
	}()
	c, _ := net.Dial("tcp", ln.Addr().String())
	bufs := net.Buffers{[]byte("alpha "), []byte("beta "), []byte("gamma")}
	n, err := bufs.WriteTo(c)
	fmt.Println("net.Buffers WriteTo:", n, err)
	c.Close()
	<-done

	var fds [2]int
	syscall.Pipe(fds[:])
	w, e := vec(syscall.SYS_WRITEV, fds[1], iovecs([]byte("one,"), nil, []byte("two,"), []byte("three")))
	fmt.Println("writev into a pipe:", w, e)
	a, b := make([]byte, 20), make([]byte, 3)
	r, e := vec(syscall.SYS_READV, fds[0], iovecs(nil, a, b))
	fmt.Printf("readv (all fits the first buffer): %d %v %q\n", r, e, a[:r])
	many := make([]syscall.Iovec, 1025)
	for i := range many {
		many[i] = iovecs([]byte("x"))[0]
	}
	_, e = vec(syscall.SYS_WRITEV, fds[1], many)
	fmt.Println("1025 iovecs:", e)
	syscall.Close(fds[1])
	rest := make([]byte, 100)
	r, _ = syscall.Read(fds[0], rest)
	fmt.Printf("the rest: %q\n", rest[:r])
}
