// A pipe's capacity as Linux gives it (fs/pipe.c, pipe(7)): 65,536 bytes by default, a non-blocking writer
// gets what fits and then EAGAIN, a write of at most PIPE_BUF bytes goes in whole or not at all, a blocking
// writer waits for the reader, F_GETPIPE_SZ/F_SETPIPE_SZ read and set it, and a socket pair's and a TCP writer meet a
// bound too. Printed to be compared with the native run.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"
)

const (
	fSETPIPE_SZ = 1031
	fGETPIPE_SZ = 1032
)

func fcntl(fd, cmd, arg int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// fill writes chunks of n bytes to a non-blocking fd until EAGAIN: the bytes that went in.
func fill(fd, n int) int {
	buf := make([]byte, n)
	total := 0
	for {
		k, err := syscall.Write(fd, buf)
		if err == syscall.EAGAIN {
			return total
		}
		if err != nil {
			panic(err)
		}
		total += k
		if total > 64<<20 {
			return -1 // no bound at all
		}
	}
}

// ready: whether epoll reports an event now (epoll_pwait, as the runtime's netpoller calls it, timeout 0).
func ready(ep int) bool {
	var ev syscall.EpollEvent
	n, _, e := syscall.Syscall6(syscall.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&ev)), 1, 0, 0, 0)
	if e != 0 {
		panic(e)
	}
	return n > 0
}

func main() {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK); err != nil {
		panic(err)
	}
	sz, _ := fcntl(p[1], fGETPIPE_SZ, 0)
	fmt.Println("capacity", sz)
	fmt.Println("filled with 4096-byte writes", fill(p[1], 4096))
	_, err := syscall.Write(p[1], []byte("x"))
	fmt.Println("one more byte:", err)
	buf := make([]byte, 100)
	n, _ := syscall.Read(p[0], buf)
	fmt.Println("read", n)
	_, err = syscall.Write(p[1], make([]byte, 200)) // 100 bytes of room: a small write is atomic
	fmt.Println("200 bytes into 100 of room:", err)
	k, err := syscall.Write(p[1], make([]byte, 5000)) // more than PIPE_BUF: what fits
	fmt.Println("5000 bytes into 100 of room:", k, err)

	_, err = fcntl(p[1], fSETPIPE_SZ, 4096)
	fmt.Println("shrink below what it holds:", err)
	for {
		if n, _ := syscall.Read(p[0], make([]byte, 1<<16)); n <= 0 {
			break
		}
	}
	sz, err = fcntl(p[1], fSETPIPE_SZ, 100000)
	fmt.Println("set 100000:", sz, err)
	fmt.Println("filled", fill(p[1], 4096))
	sz, err = fcntl(p[0], fSETPIPE_SZ, 0)
	fmt.Println("set 0:", sz, err)
	n, _ = syscall.Read(p[0], make([]byte, 4096)) // a page read to its end frees its slot
	k, err = syscall.Write(p[1], make([]byte, 10000))
	fmt.Println("10000 bytes into one free slot:", n, k, err)

	var e [2]int // small writes share a page; epoll sees a full pipe unwritable; resizing to what it holds
	if err := syscall.Pipe2(e[:], syscall.O_NONBLOCK); err != nil {
		panic(err)
	}
	fmt.Println("filled with 100-byte writes", fill(e[1], 100))
	ep, err := syscall.EpollCreate1(0)
	if err != nil {
		panic(err)
	}
	syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, e[1], &syscall.EpollEvent{Events: syscall.EPOLLOUT, Fd: int32(e[1])})
	fmt.Println("a full pipe's write end polls writable:", ready(ep))
	for {
		if n, _ := syscall.Read(e[0], make([]byte, 1<<16)); n <= 0 {
			break
		}
	}
	fmt.Println("an empty one's:", ready(ep))
	syscall.Write(e[1], make([]byte, 5000)) // two slots
	_, err = fcntl(e[1], fSETPIPE_SZ, 4096)
	fmt.Println("one page for two slots in use:", err)
	syscall.Read(e[0], make([]byte, 4096))
	sz, err = fcntl(e[1], fSETPIPE_SZ, 4096)
	fmt.Println("one page for one slot in use:", sz, err)

	var q [2]int // blocking: the writer waits until the reader has taken enough
	if err := syscall.Pipe(q[:]); err != nil {
		panic(err)
	}
	done := make(chan int)
	go func() {
		n, err := syscall.Write(q[1], make([]byte, 300000))
		if err != nil {
			panic(err)
		}
		syscall.Close(q[1])
		done <- n
	}()
	time.Sleep(5 * time.Millisecond)
	select {
	case n := <-done:
		fmt.Println("a blocking write of 300000 ended before any read:", n)
	default:
		fmt.Println("a blocking write of 300000 waits for the reader")
	}
	got := 0
	rb := make([]byte, 1<<16)
	for {
		n, err := syscall.Read(q[0], rb)
		if n <= 0 || err != nil {
			break
		}
		got += n
	}
	fmt.Println("read", got, "written", <-done)

	r, w, err := os.Pipe() // through the netpoller: EAGAIN parks the goroutine until EPOLLOUT
	if err != nil {
		panic(err)
	}
	go func() {
		w.Write(make([]byte, 1<<20))
		w.Close()
	}()
	time.Sleep(time.Millisecond)
	m, _ := io.Copy(io.Discard, r)
	fmt.Println("os.Pipe carried", m)

	s, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		panic(err)
	}
	f := fill(s[0], 4096)
	fmt.Println("a socket pair's writer meets a bound:", f > 0 && f < 8<<20)

	ln, err := net.Listen("tcp", "127.0.0.1:0") // TCP over loopback: bounded too, and 4 MiB carried
	if err != nil {
		panic(err)
	}
	bounded := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			panic(err)
		}
		c.Write(make([]byte, 4<<20))
		raw, _ := c.(*net.TCPConn).SyscallConn()
		raw.Write(func(fd uintptr) bool {
			f := fill(int(fd), 4096)
			bounded <- f > 0 && f < 64<<20
			return true
		})
		c.Close()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	time.Sleep(time.Millisecond)
	carried, err := io.ReadFull(c, make([]byte, 4<<20))
	fmt.Println("TCP carried", carried, err)
	time.Sleep(10 * time.Millisecond)
	rest, _ := io.Copy(io.Discard, c)
	fmt.Println("and the filled rest after the writer closed:", rest > 0)
	fmt.Println("a TCP writer meets a bound:", <-bounded)
}
