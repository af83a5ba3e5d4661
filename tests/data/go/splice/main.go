// splice: sendfile(2) and splice(2) as Linux answers them (tests/test_splice.py compares with a native run):
// sendfile from a /tmp file into a blocking TCP socket (every byte, the file offset moved), with *offset (the
// file's own left alone), at the end of the file, into a /tmp file, and its refusals (a pipe or a socket as the
// source, an O_APPEND destination, an offset on a pipe); into a full non-blocking socket EAGAIN. splice socket
// -> pipe -> socket as Go's net does it (SPLICE_F_NONBLOCK, EAGAIN when empty, 0 after the FIN), pipe -> pipe
// (whole buffers, the last split), file -> pipe with and without *off_in, pipe -> file at *off_out and
// -> /dev/null, EPIPE and SIGPIPE into a pipe no one reads, the argument errors, a blocking splice that waits
// for data (TCP ignores SPLICE_F_NONBLOCK for its socket, an AF_UNIX stream does not), and io.Copy of a file
// and of a TCP connection into a TCP connection (internal/poll's sendfile and splice with the poller's waits).
package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unsafe"
)

const nonblock = 2 // SPLICE_F_NONBLOCK

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func sum(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b))[:16] }

func splice(in int, offIn *int64, out int, offOut *int64, n int, flags int) (int, error) {
	r, _, e := syscall.Syscall6(syscall.SYS_SPLICE, uintptr(in), uintptr(unsafe.Pointer(offIn)), uintptr(out),
		uintptr(unsafe.Pointer(offOut)), uintptr(n), uintptr(flags))
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func sendfile(out, in int, off *int64, n int) (int, error) {
	r, _, e := syscall.Syscall6(syscall.SYS_SENDFILE, uintptr(out), uintptr(in), uintptr(unsafe.Pointer(off)),
		uintptr(n), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func pos(fd int) int64 {
	p, _ := syscall.Seek(fd, 0, io.SeekCurrent)
	return p
}

// tcpPair: a connected blocking TCP pair of raw descriptors (client, server).
func tcpPair() (int, int) {
	ln, _ := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	syscall.Bind(ln, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	syscall.Listen(ln, 1)
	sa, _ := syscall.Getsockname(ln)
	c, _ := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err := syscall.Connect(c, sa); err != nil {
		panic(err)
	}
	s, _, err := syscall.Accept(ln)
	if err != nil {
		panic(err)
	}
	syscall.Close(ln)
	return c, s
}

func readAll(fd int, want int) []byte {
	out := make([]byte, 0, want)
	buf := make([]byte, 65536)
	for len(out) < want {
		n, err := syscall.Read(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		out = append(out, buf[:n]...)
	}
	return out
}

func pipe(flags int) (int, int) {
	var p [2]int
	if err := syscall.Pipe2(p[:], flags); err != nil {
		panic(err)
	}
	return p[0], p[1]
}

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGPIPE)
	data := pattern(300000)
	os.WriteFile("/tmp/splice-src", data, 0o600)
	f, _ := syscall.Open("/tmp/splice-src", syscall.O_RDONLY, 0)

	// sendfile into a blocking TCP socket, more asked than the file has: every byte, read concurrently
	c, s := tcpPair()
	got := make(chan []byte)
	go func() { got <- readAll(c, len(data)) }()
	n, err := sendfile(s, f, nil, 1<<20)
	fmt.Println("sendfile file->tcp:", n, err, "offset now", pos(f), "received", sum(<-got) == sum(data))
	n, err = sendfile(s, f, nil, 100)
	fmt.Println("sendfile at end of file:", n, err)
	off := int64(1000)
	go func() { got <- readAll(c, 5000) }()
	n, err = sendfile(s, f, &off, 5000)
	fmt.Println("sendfile with *offset:", n, err, "*offset", off, "file offset", pos(f), "bytes", bytes.Equal(<-got, data[1000:6000]))
	off = -1
	n, err = sendfile(s, f, &off, 10)
	fmt.Println("sendfile negative *offset:", n, err)

	// sendfile into a /tmp file, and what it refuses
	dst, _ := syscall.Open("/tmp/splice-dst", syscall.O_RDWR|syscall.O_CREAT|syscall.O_TRUNC, 0o600)
	syscall.Seek(f, 250000, io.SeekStart)
	n, err = sendfile(dst, f, nil, 100000)
	back, _ := os.ReadFile("/tmp/splice-dst")
	fmt.Println("sendfile file->file:", n, err, "dst offset", pos(dst), bytes.Equal(back, data[250000:]))
	app, _ := syscall.Open("/tmp/splice-dst", syscall.O_WRONLY|syscall.O_APPEND, 0)
	_, err = sendfile(app, f, nil, 10)
	fmt.Println("sendfile to O_APPEND:", err)
	pr, pw := pipe(syscall.O_NONBLOCK)
	syscall.Write(pw, []byte("abc"))
	_, err = sendfile(s, pr, nil, 3)
	fmt.Println("sendfile from a pipe:", err)
	zero := int64(0)
	_, err = sendfile(s, pr, &zero, 3)
	fmt.Println("sendfile from a pipe with *offset:", err)
	_, err = sendfile(s, c, nil, 3)
	fmt.Println("sendfile from a socket:", err)
	_, err = sendfile(s, 999, nil, 3)
	fmt.Println("sendfile bad fd:", err)

	// sendfile from a file into the pipe: a splice (the pipe's room)
	syscall.Seek(f, 0, io.SeekStart)
	n, err = sendfile(pw, f, nil, 10000)
	fmt.Println("sendfile file->pipe:", n, err, "offset", pos(f))
	syscall.Close(pr)
	syscall.Close(pw)

	// a full non-blocking AF_UNIX socket: EAGAIN, nothing sent
	u, _ := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	syscall.SetNonblock(u[0], true)
	for {
		if _, err := syscall.Write(u[0], make([]byte, 4096)); err != nil {
			break
		}
	}
	before := pos(f)
	_, err = sendfile(u[0], f, nil, 65536)
	fmt.Println("sendfile into a full non-blocking socket:", err, "offset kept", pos(f) == before)
	syscall.Close(u[0])
	syscall.Close(u[1])

	// splice socket -> pipe -> socket, as internal/poll does it
	a1, a2 := tcpPair()
	b1, b2 := tcpPair()
	syscall.SetNonblock(a2, true)
	pr, pw = pipe(syscall.O_NONBLOCK)
	_, err = splice(a2, nil, pw, nil, 1<<20, nonblock)
	fmt.Println("splice empty socket:", err)
	msg := pattern(10000)
	syscall.Write(a1, msg)
	n1, err1 := splice(a2, nil, pw, nil, 1<<20, nonblock)
	n2, err2 := splice(pr, nil, b2, nil, n1, nonblock)
	fmt.Println("splice socket->pipe:", n1, err1, "pipe->socket:", n2, err2, "received", bytes.Equal(readAll(b1, n2), msg))
	_, err = splice(pr, nil, b2, nil, 100, nonblock)
	fmt.Println("splice empty pipe with a writer:", err)
	syscall.Shutdown(a1, syscall.SHUT_WR)
	n, err = splice(a2, nil, pw, nil, 1<<20, nonblock)
	fmt.Println("splice after FIN:", n, err)

	// pipe -> pipe: whole buffers, the last one split; then the errors
	qr, qw := pipe(syscall.O_NONBLOCK)
	syscall.Write(pw, msg)
	n, err = splice(pr, nil, qw, nil, 5000, 0)
	fmt.Println("splice pipe->pipe:", n, err, "read back", bytes.Equal(readAll(qr, 5000), msg[:5000]))
	_, err = splice(pr, &zero, qw, nil, 10, 0)
	fmt.Println("splice *off_in on a pipe:", err)
	_, err = splice(pr, nil, qw, nil, 10, 0x10)
	fmt.Println("splice unknown flag:", err)
	_, err = splice(pr, nil, pw, nil, 10, 0)
	fmt.Println("splice a pipe into itself:", err)
	_, err = splice(f, nil, s, nil, 10, 0)
	fmt.Println("splice without a pipe:", err)
	_, err = splice(pw, nil, qw, nil, 10, 0)
	fmt.Println("splice from a write end:", err)
	n, err = splice(pr, nil, qw, nil, 0, 0)
	fmt.Println("splice len 0:", n, err)
	syscall.Close(qr)
	_, err = splice(pr, nil, qw, nil, 10, 0)
	fmt.Println("splice into a pipe no one reads:", err)
	select {
	case sig := <-sigs:
		fmt.Println("signal:", sig)
	case <-time.After(200 * time.Millisecond):
		fmt.Println("no signal")
	}
	syscall.Close(qw)
	readAll(pr, 5000)

	// file -> pipe with and without *off_in; pipe -> file at *off_out; pipe -> /dev/null
	syscall.Seek(f, 100, io.SeekStart)
	off = 2000
	n, err = splice(f, &off, pw, nil, 3000, 0)
	fmt.Println("splice file->pipe *off_in:", n, err, "*off_in", off, "file offset", pos(f), bytes.Equal(readAll(pr, n), data[2000:5000]))
	n, err = splice(f, nil, pw, nil, 3000, 0)
	fmt.Println("splice file->pipe:", n, err, "file offset", pos(f), bytes.Equal(readAll(pr, n), data[100:3100]))
	syscall.Write(pw, msg[:300])
	off = 10
	n, err = splice(pr, nil, dst, &off, 300, 0)
	back, _ = os.ReadFile("/tmp/splice-dst")
	fmt.Println("splice pipe->file *off_out:", n, err, "*off_out", off, bytes.Equal(back[10:310], msg[:300]))
	null, _ := syscall.Open("/dev/null", syscall.O_WRONLY, 0)
	syscall.Write(pw, msg[:500])
	n, err = splice(pr, nil, null, nil, 1000, 0)
	fmt.Println("splice pipe->/dev/null:", n, err)
	_, err = splice(pr, nil, a2, &zero, 10, 0)
	fmt.Println("splice *off_out on a socket:", err)
	fresh, _ := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	_, err = splice(fresh, nil, pw, nil, 10, 0)
	fmt.Println("splice from an unconnected TCP socket:", err)
	lone, _ := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	_, err = splice(lone, nil, pw, nil, 10, 0)
	fmt.Println("splice from an unconnected AF_UNIX socket:", err)
	_, err = splice(f, (*int64)(unsafe.Pointer(uintptr(8))), pw, nil, 10, 0)
	fmt.Println("splice bad *off_in pointer:", err)
	_, err = sendfile(s, f, (*int64)(unsafe.Pointer(uintptr(8))), 10)
	fmt.Println("sendfile bad *offset pointer:", err)
	_, err = splice(f, nil, pw, nil, -1, 0)
	fmt.Println("splice file->pipe len -1:", err)
	_, err = splice(pr, nil, null, nil, -1, 0)
	fmt.Println("splice pipe->/dev/null len -1:", err)

	// a blocking splice waits for data: TCP with SPLICE_F_NONBLOCK (its socket is blocking), then AF_UNIX
	// whose blocking socket takes SPLICE_F_NONBLOCK as EAGAIN
	t1, t2 := tcpPair()
	done := make(chan string)
	go func() {
		n, err := splice(t2, nil, pw, nil, 1000, nonblock)
		done <- fmt.Sprint(n, err)
	}()
	time.Sleep(50 * time.Millisecond)
	syscall.Write(t1, []byte("late"))
	fmt.Println("blocking tcp splice:", <-done, string(readAll(pr, 4)))
	u, _ = syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	_, err = splice(u[1], nil, pw, nil, 1000, nonblock)
	fmt.Println("unix splice SPLICE_F_NONBLOCK:", err)
	br, bw := pipe(0)
	go func() {
		n, err := splice(u[1], nil, bw, nil, 1000, 0)
		done <- fmt.Sprint(n, err)
	}()
	time.Sleep(50 * time.Millisecond)
	syscall.Write(u[0], []byte("later"))
	fmt.Println("blocking unix splice:", <-done, string(readAll(br, 5)))
	go func() {
		n, err := splice(br, nil, u[0], nil, 1000, 0)
		done <- fmt.Sprint(n, err)
	}()
	time.Sleep(50 * time.Millisecond)
	syscall.Write(bw, []byte("pumped"))
	fmt.Println("blocking pipe->socket splice:", <-done, string(readAll(u[1], 6)))

	// io.Copy through internal/poll: a file into a TCP connection (sendfile), a TCP connection into another
	// (splice), 3 MB each: the non-blocking sockets fill, EAGAIN, the poller waits
	big := pattern(3 << 20)
	os.WriteFile("/tmp/splice-big", big, 0o600)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	recv := make(chan string)
	go func() {
		cc, _ := ln.Accept()
		b, _ := io.ReadAll(cc)
		recv <- fmt.Sprint(len(b), " ", sum(b) == sum(big))
	}()
	conn, _ := net.Dial("tcp", ln.Addr().String())
	bf, _ := os.Open("/tmp/splice-big")
	cn, cerr := io.Copy(conn, bf)
	conn.Close()
	fmt.Println("io.Copy file->tcp:", cn, cerr, <-recv)

	go func() {
		cc, _ := ln.Accept()
		b, _ := io.ReadAll(cc)
		recv <- fmt.Sprint(len(b), " ", sum(b) == sum(big))
	}()
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() {
		w, _ := net.Dial("tcp", ln2.Addr().String())
		w.Write(big)
		w.Close()
	}()
	up, _ := ln2.Accept()
	down, _ := net.Dial("tcp", ln.Addr().String())
	cn, cerr = io.Copy(down, up)
	down.Close()
	fmt.Println("io.Copy tcp->tcp:", cn, cerr, <-recv)
}
