// Raw IPv4 sockets as root opens them (net's TestIPConnLocalName, TestIPConnRemoteName,
// TestIPConnSpecificMethods): ListenIP and DialIP, the names (getsockname's port is the protocol), options,
// File, writes with and without a destination; and the socket(2) errors for protocol 0 and IPPROTO_MAX.
package main

import (
	"fmt"
	"net"
	"syscall"
	"time"
)

func names(fd int) string {
	la, _ := syscall.Getsockname(fd)
	ra, err := syscall.Getpeername(fd)
	l := la.(*syscall.SockaddrInet4)
	s := fmt.Sprintf("local %v:%d", net.IP(l.Addr[:]), l.Port)
	if err != nil {
		return s + " peer: " + err.Error()
	}
	r := ra.(*syscall.SockaddrInet4)
	return s + fmt.Sprintf(" peer %v:%d", net.IP(r.Addr[:]), r.Port)
}

func main() {
	for _, la := range []*net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}, {}, nil} {
		c, err := net.ListenIP("ip4:icmp", la)
		if err != nil {
			fmt.Println("listen:", err)
			continue
		}
		fmt.Println("listen ip4:icmp", la, "->", c.LocalAddr(), c.RemoteAddr())
		c.Close()
	}
	raddr := &net.IPAddr{IP: net.IPv4(127, 0, 0, 1).To4()}
	c, err := net.DialIP("ip:tcp", &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)}, raddr)
	if err != nil {
		fmt.Println("dial:", err)
	} else {
		fmt.Println("dial ip:tcp ->", c.LocalAddr(), c.RemoteAddr())
		n, err := c.Write([]byte("RAW TCP"))
		fmt.Println("  connected write:", n, err)
		if f, err := c.File(); err == nil {
			fmt.Println("  names:", names(int(f.Fd())))
			f.Close()
		}
		c.Close()
	}
	c, err = net.DialIP("ip4:47", nil, raddr)
	fmt.Println("dial ip4:47 without laddr:", err == nil)
	if err == nil {
		c.Close()
	}

	la, _ := net.ResolveIPAddr("ip4", "127.0.0.1")
	c, err = net.ListenIP("ip4:icmp", la)
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	fmt.Println("deadline:", c.SetDeadline(time.Now().Add(time.Second)))
	fmt.Println("buffers:", c.SetReadBuffer(2048), c.SetWriteBuffer(2048))
	f, err := c.File()
	fmt.Println("file:", err)
	if err == nil {
		fd := int(f.Fd())
		fmt.Println("  names:", names(fd))
		typ, _ := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TYPE)
		proto, _ := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_PROTOCOL)
		fmt.Println("  type", typ, "protocol", proto)
		fmt.Println("  write without a destination:", syscall.Sendto(fd, []byte("x"), 0, nil))
		fmt.Println("  bind again:", syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
		fmt.Println("  bind elsewhere:", syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{192, 0, 2, 1}}))
		f.Close()
	}
	_, err = c.WriteToIP([]byte("IPCONN TEST"), nil)
	fmt.Println("WriteToIP nil:", err)
	_, _, err = c.WriteMsgIP([]byte("IPCONN TEST"), nil, nil)
	fmt.Println("WriteMsgIP nil:", err)
	n, err := c.WriteToIP([]byte{8, 0, 0, 0, 0, 0, 0, 0}, &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)})
	fmt.Println("WriteToIP 127.0.0.1:", n, err)
	n, err = c.WriteToIP(make([]byte, 70000), &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)})
	fmt.Println("WriteToIP 70000 bytes:", n, err)
	c.Close()

	for _, proto := range []int{0, 255, 256, 263} {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, proto)
		fmt.Println("raw socket protocol", proto, ":", err)
		if err == nil {
			fmt.Println("  unbound:", names(fd))
			syscall.Close(fd)
		}
	}
}
