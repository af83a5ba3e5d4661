// Datagram receive queues that nobody reads, as Linux bounds them: an AF_UNIX receiver takes
// net.unix.max_dgram_qlen + 1 datagrams, then a connected non-blocking sender waits (Go's write deadline ends it)
// and goes on once a read makes room; a blocking sender waits in sendto until then; UDP drops what is past the
// receiver's buffer, so of 1000 datagrams only some arrive.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

func unixgram(dir string) {
	addr := &net.UnixAddr{Name: filepath.Join(dir, "r.sock"), Net: "unixgram"}
	r, err := net.ListenUnixgram("unixgram", addr)
	if err != nil {
		fmt.Println("listen:", err)
		return
	}
	defer r.Close()
	w, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		fmt.Println("dial:", err)
		return
	}
	defer w.Close()
	n := 0
	for {
		w.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err = w.Write([]byte("datagram")); err != nil {
			break
		}
		n++
	}
	fmt.Printf("unixgram: %d datagrams queued, then timeout %v\n", n, errors.Is(err, os.ErrDeadlineExceeded))
	b := make([]byte, 64)
	r.Read(b)
	w.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_, err = w.Write([]byte("one more"))
	fmt.Println("after one read, a write:", err)

	// a blocking sender (no O_NONBLOCK) waits in sendto until a read makes room
	fd, _ := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM, 0)
	defer syscall.Close(fd)
	done := make(chan error)
	go func() { done <- syscall.Sendto(fd, []byte("blocked"), 0, &syscall.SockaddrUnix{Name: addr.Name}) }()
	select {
	case err := <-done:
		fmt.Println("blocking sendto to a full queue returned at once:", err)
		return
	case <-time.After(100 * time.Millisecond):
		fmt.Println("blocking sendto to a full queue waits")
	}
	r.Read(b)
	select {
	case err := <-done:
		fmt.Println("after a read it went on:", err)
	case <-time.After(2 * time.Second):
		fmt.Println("after a read it still waits")
	}
	m := 0
	r.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	for {
		if _, err := r.Read(b); err != nil {
			break
		}
		m++
	}
	fmt.Println("datagrams left to read:", m)
}

func udp() {
	r, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		fmt.Println("listen udp:", err)
		return
	}
	defer r.Close()
	r.SetReadBuffer(65536) // 128 KiB once doubled: the host's net.core.rmem_default may be anything
	w, _ := net.DialUDP("udp", nil, r.LocalAddr().(*net.UDPAddr))
	defer w.Close()
	payload := make([]byte, 1000)
	sent := 0
	for i := 0; i < 1000; i++ {
		if _, err := w.Write(payload); err == nil {
			sent++
		}
	}
	got := 0
	b := make([]byte, 2000)
	r.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	for {
		if _, err := r.Read(b); err != nil {
			break
		}
		got++
	}
	fmt.Printf("udp: %d sends succeeded; some arrived %v, some were dropped %v\n", sent, got > 10, got < 1000)
}

func main() {
	dir, _ := os.MkdirTemp("", "dgramfull")
	defer os.RemoveAll(dir)
	unixgram(dir)
	udp()
}
