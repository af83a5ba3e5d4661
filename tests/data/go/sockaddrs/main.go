// Socket addresses and options as Linux gives them (the cases Go's own net tests check): an AF_UNIX socket
// bound with no name is autobound to an abstract "@xxxxx" name (unix(7)); a datagram from a sender with no
// address arrives with none (nil); binding a path that exists is EADDRINUSE; getsockopt of options never set
// answers Linux's defaults; a large write to a TCP peer that closed returns short, then fails.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

func autobind() {
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "", Net: "unixgram"})
	if err != nil {
		fmt.Println("autobind unixgram:", err)
		return
	}
	defer c.Close()
	name := c.LocalAddr().(*net.UnixAddr).Name
	fmt.Printf("autobind unixgram: %d bytes, starts with @: %v\n", len(name), name[0] == '@')
	d, err := net.DialUnix("unixgram", nil, c.LocalAddr().(*net.UnixAddr))
	if err != nil {
		fmt.Println("dial autobound:", err)
		return
	}
	defer d.Close()
	fmt.Println("dialer's remote is the autobound name:", d.RemoteAddr().String() == name)
	// the dialer itself is unbound: its datagram comes with no address
	d.Write([]byte("hi"))
	b := make([]byte, 8)
	c.SetReadDeadline(time.Now().Add(time.Second))
	n, from, err := c.ReadFrom(b)
	fmt.Printf("from an unbound sender: %q from %v (nil %v), err %v\n", b[:n], from, from == nil, err)

	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: "", Net: "unix"})
	if err != nil {
		fmt.Println("autobind unix listener:", err)
		return
	}
	fmt.Println("autobind unix listener:", len(ln.Addr().String()), ln.Close())
}

func unnamedPair() {
	fds, _ := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_DGRAM, 0)
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	syscall.Write(fds[0], []byte("pair"))
	b := make([]byte, 8)
	n, from, err := syscall.Recvfrom(fds[1], b, 0)
	fmt.Printf("socketpair datagram: %q from %v, err %v\n", b[:n], from, err)
	sa, err := syscall.Getsockname(fds[0])
	fmt.Printf("socketpair getsockname: %#v %v\n", sa, err)
}

func existing() {
	for _, path := range []string{"//", "/dev/null"} {
		_, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		fmt.Printf("listen unix %s: EADDRINUSE %v\n", path, errors.Is(err, syscall.EADDRINUSE))
	}
	// connect and send to a name no socket has: a path naming something else is refused, a path naming
	// nothing is ENOENT, an abstract name is refused
	for _, net_ := range []string{"unix", "unixgram"} {
		for _, path := range []string{"//", "/nonexistent/sock", "@nobody-here"} {
			_, err := net.DialUnix(net_, nil, &net.UnixAddr{Name: path, Net: net_})
			fmt.Printf("dial %s %s: ECONNREFUSED %v ENOENT %v\n", net_, path, errors.Is(err, syscall.ECONNREFUSED),
				errors.Is(err, syscall.ENOENT))
		}
	}
	s, _ := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM, 0)
	err := syscall.Sendto(s, []byte("x"), 0, &syscall.SockaddrUnix{Name: "@nobody-here"})
	fmt.Println("sendto an abstract name no one has:", err)
	syscall.Close(s)
}

func defaults() {
	for _, k := range []struct {
		typ, level, opt int
		name            string
	}{
		{syscall.SOCK_STREAM, syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, "SO_KEEPALIVE"},
		{syscall.SOCK_STREAM, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, "SO_REUSEADDR"},
		{syscall.SOCK_STREAM, syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, "TCP_KEEPIDLE"},
		{syscall.SOCK_STREAM, syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, "TCP_KEEPINTVL"},
		{syscall.SOCK_STREAM, syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, "TCP_KEEPCNT"},
		{syscall.SOCK_STREAM, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, "TCP_NODELAY"},
		{syscall.SOCK_STREAM, syscall.IPPROTO_IP, syscall.IP_TTL, "IP_TTL"},
		{syscall.SOCK_DGRAM, syscall.IPPROTO_IP, syscall.IP_MULTICAST_LOOP, "IP_MULTICAST_LOOP"},
		{syscall.SOCK_DGRAM, syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, "TCP_KEEPIDLE on UDP"},
	} {
		s, _ := syscall.Socket(syscall.AF_INET, k.typ, 0)
		v, err := syscall.GetsockoptInt(s, k.level, k.opt)
		fmt.Printf("default %s: %d %v\n", k.name, v, err)
		syscall.Close(s)
	}
	s, _ := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	syscall.SetsockoptInt(s, syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, 30)
	v, err := syscall.GetsockoptInt(s, syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
	fmt.Printf("TCP_KEEPIDLE after setting 30: %d %v\n", v, err)
	syscall.Close(s)
	// a set buffer size is doubled, and at least the minimum (its cap, net.core.rmem_max/wmem_max, is the host's
	// setting: not printed)
	u, _ := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
	for _, set := range []int{10000, 1} {
		syscall.SetsockoptInt(u, syscall.SOL_SOCKET, syscall.SO_RCVBUF, set)
		syscall.SetsockoptInt(u, syscall.SOL_SOCKET, syscall.SO_SNDBUF, set)
		r, _ := syscall.GetsockoptInt(u, syscall.SOL_SOCKET, syscall.SO_RCVBUF)
		w, _ := syscall.GetsockoptInt(u, syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		fmt.Printf("SO_RCVBUF/SO_SNDBUF set to %d: %d %d\n", set, r, w)
	}
	syscall.Close(u)
}

func writeToClosed() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	ch := make(chan net.Conn)
	go func() { c, _ := ln.Accept(); ch <- c }()
	c1, _ := net.Dial("tcp", ln.Addr().String())
	defer c1.Close()
	(<-ch).Close()
	buf := make([]byte, 1<<20)
	bufs := make(net.Buffers, 64)
	for i := range bufs {
		bufs[i] = buf
	}
	n, err := bufs.WriteTo(c1)
	fmt.Printf("64 MiB to a closed peer: all written %v, error %v\n", n == 64<<20, err != nil)
}

func main() {
	autobind()
	unnamedPair()
	existing()
	defaults()
	writeToClosed()
	os.Stdout.Sync()
}
