// Signals a program sends itself: kill(getpid(), SIGUSR1) to a signal.Notify channel, tkill to one
// thread, EINTR from a nanosleep that a handler interrupted (nanosleep is never restarted, signal(7)) with
// the time left in rem,
// and at the end SIGTERM with its default action: the process dies with it (shell status 143).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"
)

func main() {
	fmt.Println("parent is a process:", os.Getppid() > 0, "ids:", os.Getuid() == os.Geteuid(), os.Getgid() == os.Getegid())
	c := make(chan os.Signal, 4)
	signal.Notify(c, syscall.SIGUSR1, syscall.SIGUSR2)
	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	fmt.Println("kill:", <-c)
	fmt.Println("kill 0 (does it exist):", syscall.Kill(os.Getpid(), 0))

	tid := make(chan int)
	slept := make(chan error)
	go func() {
		runtime.LockOSThread()
		tid <- syscall.Gettid()
		ts := syscall.NsecToTimespec(int64(5 * time.Second))
		var rem syscall.Timespec
		err := syscall.Nanosleep(&ts, &rem)
		fmt.Println("time left after the interruption about 4.98 s:", rem.Sec == 4 && rem.Nsec > 900_000_000)
		slept <- err
	}()
	t := <-tid
	time.Sleep(20 * time.Millisecond)
	syscall.Tgkill(os.Getpid(), t, syscall.SIGUSR2)
	fmt.Println("nanosleep:", <-slept)
	fmt.Println("tgkill:", <-c)

	signal.Reset()
	os.Stdout.Sync()
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	time.Sleep(time.Second)
	fmt.Println("not reached")
}
