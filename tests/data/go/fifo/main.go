// fifo: a named pipe in a temporary directory (os's TestFifoEOF): a reader and a writer open it from two
// goroutines (each open waits for the other), the reader reads what was written and then EOF; a non-blocking
// writer with no reader gets ENXIO (tests/test_pipes.py compares the output with a native run).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

func main() {
	dir, _ := os.MkdirTemp("", "fifo")
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "fifo")
	fmt.Println("mkfifo:", syscall.Mkfifo(name, 0o600))
	st, err := os.Stat(name)
	fmt.Println("stat:", err, st.Mode()&os.ModeNamedPipe != 0, st.Mode().Perm())
	_, err = os.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	fmt.Println("non-blocking writer, no reader:", errors.Is(err, syscall.ENXIO))
	got := make(chan string)
	go func() {
		r, err := os.Open(name)
		if err != nil {
			got <- err.Error()
			return
		}
		b, err := io.ReadAll(r)
		r.Close()
		got <- fmt.Sprintf("%q %v", b, err)
	}()
	w, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		fmt.Println("open writer:", err)
		return
	}
	w.Write([]byte("through the fifo"))
	w.Close()
	fmt.Println("reader got:", <-got)
	fmt.Println("mkfifo again:", syscall.Mkfifo(name, 0o600))
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		fmt.Println("entry:", e.Name(), e.Type()&os.ModeNamedPipe != 0)
	}
}
