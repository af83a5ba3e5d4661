// Multipath TCP over loopback as Go checks it (net/mptcpsock_linux.go): an IPPROTO_MPTCP socket, SO_PROTOCOL,
// getsockopt(SOL_MPTCP, MPTCP_INFO) answering while MPTCP is in use and EOPNOTSUPP once the connection fell
// back to TCP (one end plain TCP), and TCPConn.MultipathTCP on both ends of each pairing.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
)

const ipprotoMPTCP, solMPTCP, mptcpInfo = 262, 284, 1

func describe(c net.Conn) string {
	tc := c.(*net.TCPConn)
	mp, err := tc.MultipathTCP()
	raw, _ := tc.SyscallConn()
	var proto int
	var infoErr error
	raw.Control(func(fd uintptr) {
		proto, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PROTOCOL)
		_, infoErr = syscall.GetsockoptInt(int(fd), solMPTCP, mptcpInfo)
	})
	return fmt.Sprintf("mptcp=%v err=%v proto=%d info=%v", mp, err, proto, infoErr)
}

func pair(listenMP, dialMP bool) {
	lc := &net.ListenConfig{}
	lc.SetMultipathTCP(listenMP)
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	defer ln.Close()
	done := make(chan string)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err.Error()
			return
		}
		defer c.Close()
		b := make([]byte, 5)
		n, _ := c.Read(b)
		c.Write(b[:n])
		done <- describe(c)
	}()
	d := &net.Dialer{}
	d.SetMultipathTCP(dialMP)
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer c.Close()
	c.Write([]byte("hello"))
	b := make([]byte, 5)
	n, _ := c.Read(b)
	fmt.Printf("listener mptcp %v, dialer mptcp %v: echoed %q\n", listenMP, dialMP, b[:n])
	fmt.Println("  dialer:  ", describe(c))
	fmt.Println("  accepted:", <-done)
}

func main() {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, ipprotoMPTCP)
	fmt.Println("mptcp socket:", err)
	if err == nil {
		p, _ := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_PROTOCOL)
		_, infoErr := syscall.GetsockoptInt(fd, solMPTCP, mptcpInfo)
		fmt.Println("  unconnected: proto", p, "info", infoErr)
		syscall.Close(fd)
	}
	for _, kind := range []int{syscall.SOCK_DGRAM, syscall.SOCK_RAW} {
		_, err := syscall.Socket(syscall.AF_INET, kind, ipprotoMPTCP)
		fmt.Println("mptcp with type", kind, ":", err, errors.Is(err, syscall.EPROTONOSUPPORT))
	}
	tcp, _ := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	p, _ := syscall.GetsockoptInt(tcp, syscall.SOL_SOCKET, syscall.SO_PROTOCOL)
	_, infoErr := syscall.GetsockoptInt(tcp, solMPTCP, mptcpInfo)
	fmt.Println("tcp socket: proto", p, "info", infoErr)
	syscall.Close(tcp)
	udp, _ := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
	p, _ = syscall.GetsockoptInt(udp, syscall.SOL_SOCKET, syscall.SO_PROTOCOL)
	fmt.Println("udp socket: proto", p)
	syscall.Close(udp)
	for _, lm := range []bool{true, false} {
		for _, dm := range []bool{true, false} {
			pair(lm, dm)
		}
	}
}
