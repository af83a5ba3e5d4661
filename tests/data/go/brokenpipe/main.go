// Writes nobody reads (tests/test_survivors.py): a pipe whose read end is closed and a unix socket whose peer
// is gone answer EPIPE and send the writer SIGPIPE (fs/pipe.c, net/unix/af_unix.c), which signal.Notify
// receives; a send with MSG_NOSIGNAL answers EPIPE without it. Prints the same natively and under preemu exec.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGPIPE)
	wait := func(what string) {
		select {
		case s := <-c:
			fmt.Println(what, "signal:", s)
		case <-time.After(200 * time.Millisecond):
			fmt.Println(what, "no signal")
		}
	}
	r, w, _ := os.Pipe()
	r.Close()
	_, err := w.Write([]byte("x"))
	fmt.Println("pipe write:", err)
	wait("pipe")

	fds, _ := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	syscall.Close(fds[1])
	_, err = syscall.Write(fds[0], []byte("x"))
	fmt.Println("socket write:", err)
	wait("socket")
	err = syscall.Sendto(fds[0], []byte("x"), syscall.MSG_NOSIGNAL, nil)
	fmt.Println("sendto MSG_NOSIGNAL:", err)
	wait("MSG_NOSIGNAL")

	signal.Reset(syscall.SIGPIPE) // the runtime's handler again: a SIGPIPE for a descriptor other than 1 and 2 is ignored
	_, err = w.Write([]byte("x"))
	fmt.Println("pipe write, not notified:", err)
}
