// seqpacket: AF_UNIX SOCK_SEQPACKET ("unixpacket"): a listener in /tmp, records kept whole (a short read
// takes one record and drops its rest), EOF once the peer closed; a socketpair too (tests/test_sockets.py
// compares the output with a native run).
package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

func main() {
	dir, _ := os.MkdirTemp("", "seqpacket")
	defer os.RemoveAll(dir)
	ln, err := net.Listen("unixpacket", filepath.Join(dir, "sock"))
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		c.Write([]byte("first record"))
		c.Write([]byte("second"))
		c.Write([]byte("third, cut short"))
		c.Close()
	}()
	c, err := net.Dial("unixpacket", ln.Addr().String())
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	buf := make([]byte, 64)
	for _, size := range []int{64, 64, 5, 64} {
		n, err := c.Read(buf[:size])
		fmt.Printf("read %d: %q %v\n", size, buf[:n], err)
	}
	c.Close()
	ln.Close()

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET, 0)
	fmt.Println("socketpair:", err)
	syscall.Write(fds[0], []byte("ab"))
	syscall.Write(fds[0], []byte("cd"))
	n, _ := syscall.Read(fds[1], buf)
	fmt.Printf("pair read: %q\n", buf[:n])
	typ, _ := syscall.GetsockoptInt(fds[1], syscall.SOL_SOCKET, syscall.SO_TYPE)
	fmt.Println("SO_TYPE:", typ)
}
