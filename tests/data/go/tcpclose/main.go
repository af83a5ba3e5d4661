// tcpclose: loopback TCP when a peer closes, resets or shuts down, and a dial to the empty host, as Linux
// answers each (tests/test_sockets.py compares the output with a native run).
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

func name(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, syscall.EPIPE):
		return "EPIPE"
	case errors.Is(err, syscall.ECONNRESET):
		return "ECONNRESET"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "ECONNREFUSED"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	}
	return err.Error()
}

func main() {
	// A server that accepts and closes at once (net's TestDialerKeepAlive): every dial connects.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ok := 0
	for i := 0; i < 6; i++ {
		d := net.Dialer{Timeout: 2 * time.Second, KeepAlive: time.Duration(i-1) * time.Second}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err == nil {
			ok++
			c.Close()
		} else {
			fmt.Println("dial", i, name(err))
		}
	}
	fmt.Println("dials to an accept-and-close server:", ok, "of 6")

	// After the peer closed: read EOF, the first write succeeds (the peer answers RST), the second fails.
	c, _ := net.Dial("tcp", ln.Addr().String())
	n, err := c.Read(make([]byte, 4))
	fmt.Println("read after the peer closed:", n, name(err))
	_, err1 := c.Write([]byte("hello"))
	time.Sleep(10 * time.Millisecond)
	_, err2 := c.Write([]byte("again"))
	_, err3 := c.Write([]byte("third"))
	n, err = c.Read(make([]byte, 4))
	fmt.Println("writes after the peer closed:", name(err1), name(err2), name(err3), "then read:", n, name(err))
	c.Close()
	ln.Close()

	// A peer that closes with unread data resets the connection: the reader gets ECONNRESET, then EOF.
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	got := make(chan bool)
	go func() {
		s, _ := ln2.Accept()
		<-got
		s.Close()
		got <- true
	}()
	c, _ = net.Dial("tcp", ln2.Addr().String())
	c.Write([]byte("unread"))
	time.Sleep(10 * time.Millisecond)
	got <- true
	<-got
	n, err = c.Read(make([]byte, 4))
	n2, err2 := c.Read(make([]byte, 4))
	_, err3 = c.Write([]byte("x"))
	fmt.Println("after a reset:", n, name(err), n2, name(err2), "write:", name(err3))
	c.Close()

	// Half close: CloseWrite, the peer reads EOF and still answers.
	go func() {
		s, _ := ln2.Accept()
		b, _ := io.ReadAll(s)
		s.Write([]byte(fmt.Sprintf("got %q", b)))
		s.Close()
	}()
	c, _ = net.Dial("tcp", ln2.Addr().String())
	c.Write([]byte("half"))
	c.(*net.TCPConn).CloseWrite()
	b, err := io.ReadAll(c)
	_, werr := c.Write([]byte("x"))
	fmt.Println("half close:", string(b), name(err), "write after CloseWrite:", name(werr))
	c.Close()

	// CloseRead: the local reads end, but the peer's writes still succeed (TCP, unlike a unix socket).
	done := make(chan string)
	go func() {
		s, _ := ln2.Accept()
		time.Sleep(10 * time.Millisecond)
		_, e1 := s.Write([]byte("ignored"))
		done <- name(e1)
		s.Close()
	}()
	c, _ = net.Dial("tcp", ln2.Addr().String())
	c.(*net.TCPConn).CloseRead()
	n, err = c.Read(make([]byte, 4))
	fmt.Println("CloseRead:", n, name(err), "peer's write:", <-done)
	c.Close()

	// A connection the server never accepted is reset when the listener closes.
	c, _ = net.Dial("tcp", ln2.Addr().String())
	time.Sleep(10 * time.Millisecond)
	ln2.Close()
	n, err = c.Read(make([]byte, 4))
	fmt.Println("listener closed before accept:", n, name(err))
	c.Close()

	// The empty host dials the local host.
	ln3, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() {
		s, err := ln3.Accept()
		if err == nil {
			s.Write([]byte("hi"))
			s.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln3.Addr().String())
	c, err = net.Dial("tcp", ":"+port)
	if err != nil {
		fmt.Println("dial :port:", name(err))
	} else {
		b, _ := io.ReadAll(c)
		fmt.Println("dial :port:", string(b), "remote is loopback:", c.RemoteAddr().(*net.TCPAddr).IP.IsLoopback())
		c.Close()
	}
	_, err = net.Dial("tcp", "0.0.0.0:"+port)
	fmt.Println("dial 0.0.0.0:port:", name(err))
	ln3.Close()
	_, err = net.Dial("tcp", ":"+port)
	fmt.Println("dial :port, no listener:", name(err))
}
