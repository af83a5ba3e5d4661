// Duplicated descriptors share one open file (dup(2)): a pipe's write end duplicated with dup, dup3 and
// fcntl(F_DUPFD), written through each copy; closing the original leaves the copies working, and the
// reader sees end of file only when the last copy is closed. A file's offset is shared by its copies.
package main

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

func main() {
	r, w, _ := os.Pipe()
	a, err := syscall.Dup(int(w.Fd()))
	fmt.Println("dup:", err)
	b := a + 10
	fmt.Println("dup3:", syscall.Dup3(int(w.Fd()), b, 0))
	fmt.Println("dup3 onto itself:", syscall.Dup3(b, b, 0))
	c, _, errno := syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), syscall.F_DUPFD, uintptr(b+5))
	fmt.Println("F_DUPFD at or above:", int(c) >= b+5, errno == 0)
	w.Write([]byte("orig "))
	w.Close()
	syscall.Write(a, []byte("dup "))
	syscall.Write(b, []byte("dup3 "))
	syscall.Write(int(c), []byte("fdup"))
	syscall.Close(a)
	syscall.Close(b)
	syscall.Close(int(c))
	all, err := io.ReadAll(r)
	fmt.Printf("read %q %v\n", all, err)

	f, _ := os.CreateTemp("", "dup")
	f.WriteString("0123456789")
	g, _ := syscall.Dup(int(f.Fd()))
	f.Seek(3, io.SeekStart)
	buf := make([]byte, 2)
	syscall.Read(g, buf)
	fmt.Printf("shared offset: %q\n", buf)
	fmt.Println("bad dup:", syscall.Dup2(999, 5) == syscall.EBADF)
	os.Remove(f.Name())
}
