// unixfile: an AF_UNIX socket bound to a path in /tmp is a socket file there, as net/unix/af_unix.c makes
// it: lstat and readdir see a socket, open is ENXIO, a second bind EADDRINUSE; connect after close is refused,
// after unlink ENOENT, to a regular file refused; a renamed file still reaches its socket
// (tests/test_sockets.py compares with a native run; log/syslog's TestFlap unlinks and rebinds).
package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	dir, _ := os.MkdirTemp("", "us")
	path := filepath.Join(dir, "sock")
	say := func(a ...any) { fmt.Print(strings.ReplaceAll(fmt.Sprintln(a...), dir, "DIR")) }
	l, err := net.Listen("unix", path)
	say("listen:", err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	fi, err := os.Lstat(path)
	say("lstat:", err, fi.Mode()&os.ModeSocket != 0, fi.Mode().Perm())
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		say("entry:", e.Name(), e.Type()&os.ModeSocket != 0)
	}
	_, err = os.Open(path)
	say("open:", err)
	_, err = net.Listen("unix", path)
	say("listen again:", err)
	c, err := net.Dial("unix", path)
	say("dial:", err)
	c.Close()
	l.Close()
	_, err = net.Dial("unix", path)
	say("dial after close:", err)
	say("remove:", os.Remove(path))
	_, err = net.Dial("unix", path)
	say("dial after remove:", err)
	os.WriteFile(path, []byte("x"), 0644)
	_, err = net.Dial("unix", path)
	say("dial a file:", err)
	os.Remove(path)
	a, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	say("listen unixgram:", err)
	os.Rename(path, path+"2")
	b, _ := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path + "2", Net: "unixgram"})
	b.Write([]byte("hi"))
	buf := make([]byte, 10)
	n, _, err := a.ReadFrom(buf)
	say("datagram through the renamed file:", string(buf[:n]), err)
	s, _ := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM, 0)
	err = syscall.Sendto(s, []byte("x"), 0, &syscall.SockaddrUnix{Name: path})
	say("sendto a path with no file:", err)
	err = syscall.Bind(s, &syscall.SockaddrUnix{Name: filepath.Join(dir, "no", "sock")})
	say("bind under a missing directory:", err)
	os.RemoveAll(dir)
}
