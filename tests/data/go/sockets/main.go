// Sockets inside one process: a loopback TCP echo, a UDP round trip, an AF_UNIX stream in /tmp, a
// socketpair, and an HTTP server (net/http/httptest) with a client. Everything stays in the process;
// the output is the same natively and under preemu exec.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

func echo(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
		}()
	}
}

func roundTrip(network, addr string, msg string) string {
	c, err := net.Dial(network, addr)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	fmt.Fprintf(c, "%s\n", msg)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimSpace(line)
}

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	go echo(l)
	for i := 0; i < 3; i++ {
		fmt.Println("tcp", roundTrip("tcp", l.Addr().String(), fmt.Sprintf("hello %d", i)))
	}
	addr := l.Addr().String()
	l.Close()
	_, err = net.Dial("tcp", addr)
	fmt.Println("closed listener refuses:", errors.Is(err, syscall.ECONNREFUSED))
	l, err = net.Listen("tcp", addr)
	fmt.Println("the address is free again:", err == nil)
	l.Close()

	any4, _ := net.Listen("tcp4", "0.0.0.0:0")
	go echo(any4)
	port := any4.Addr().(*net.TCPAddr).Port
	fmt.Println("wildcard listener, loopback dial:", roundTrip("tcp", fmt.Sprintf("127.0.0.1:%d", port), "any"))
	cr, _ := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	cr.(*net.TCPConn).CloseRead()
	nr, err := cr.Read(make([]byte, 8))
	fmt.Println("read after CloseRead:", nr, err)
	cr.Close()
	any4.Close()

	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("udp listen:", err)
		return
	}
	go func() {
		buf := make([]byte, 100)
		n, from, err := pc.ReadFrom(buf)
		if err == nil {
			pc.WriteTo([]byte(strings.ToUpper(string(buf[:n]))), from)
		}
	}()
	uc, _ := net.Dial("udp", pc.LocalAddr().String())
	uc.Write([]byte("datagram"))
	buf := make([]byte, 100)
	n, _ := uc.Read(buf)
	fmt.Println("udp", string(buf[:n]))

	sock := filepath.Join(os.TempDir(), "echo.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println("unix listen:", err)
		return
	}
	go echo(ul)
	fmt.Println("unix", roundTrip("unix", sock, "over a unix socket"))
	ul.Close()

	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		fmt.Println("socketpair:", err)
		return
	}
	a, b := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	go func() { a.Write([]byte("paired")); a.Close() }()
	got, _ := io.ReadAll(b)
	fmt.Println("socketpair", string(got))

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "you asked for %s", r.URL.Path)
	}))
	resp, err := http.Get(srv.URL + "/preemption")
	if err != nil {
		fmt.Println("http:", err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	srv.Close()
	fmt.Println("http", resp.StatusCode, string(body))
}
