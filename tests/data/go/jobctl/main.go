// jobctl: stopping and continuing a process as Linux does: a child stopped by SIGSTOP answers nothing until
// SIGCONT, then goes on where it was (its read of stdin restarted, not EINTR); SIGCONT to a running child
// changes nothing; a child that catches SIGTSTP is not stopped by it (os/exec's TestWaitid stops and
// continues a child; tests/test_procs.py compares with a native run).
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func child() {
	if os.Getenv("JOBCTL_CATCH") != "" {
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTSTP)
		fmt.Println("ready")
		fmt.Println("caught", <-c)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println("got", in.Text())
	}
	fmt.Println("stdin closed:", in.Err())
}

func main() {
	if os.Getenv("JOBCTL_CHILD") != "" {
		child()
		return
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{"JOBCTL_CHILD=1"}
	w, _ := cmd.StdinPipe()
	r, pw, _ := os.Pipe()
	cmd.Stdout = pw
	cmd.Start()
	pw.Close()
	out := bufio.NewReader(r)

	fmt.Fprintln(w, "one")
	line, _ := out.ReadString('\n')
	fmt.Print("running child: ", line)
	fmt.Println("SIGCONT while running:", cmd.Process.Signal(syscall.SIGCONT))
	fmt.Fprintln(w, "two")
	line, _ = out.ReadString('\n')
	fmt.Print("still answers: ", line)

	fmt.Println("SIGSTOP:", cmd.Process.Signal(syscall.SIGSTOP))
	// kill(2) returns once the stop is pending; every thread of the child must still run to stop, which a loaded
	// machine can delay (natively, 1 run in 40 beside three busy loops read "three" before stopping): give it time
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintln(w, "three")
	r.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := out.ReadString('\n')
	fmt.Println("a stopped child answers nothing:", os.IsTimeout(err))
	r.SetReadDeadline(time.Time{})
	fmt.Println("SIGCONT:", cmd.Process.Signal(syscall.SIGCONT))
	line, _ = out.ReadString('\n')
	fmt.Print("then it goes on: ", line)
	w.Close()
	line, _ = out.ReadString('\n')
	fmt.Print("and ends: ", line)
	fmt.Println("wait:", cmd.Wait())

	cmd = exec.Command(os.Args[0])
	cmd.Env = []string{"JOBCTL_CHILD=1", "JOBCTL_CATCH=1"}
	w, _ = cmd.StdinPipe()
	r, pw, _ = os.Pipe()
	cmd.Stdout = pw
	cmd.Start()
	pw.Close()
	out = bufio.NewReader(r)
	line, _ = out.ReadString('\n')
	fmt.Print("catcher: ", line)
	fmt.Println("SIGTSTP:", cmd.Process.Signal(syscall.SIGTSTP))
	line, _ = out.ReadString('\n')
	fmt.Print("catcher: ", line)
	fmt.Fprintln(w, "four")
	line, _ = out.ReadString('\n')
	fmt.Print("catcher answers: ", line)
	w.Close()
	fmt.Println("wait:", cmd.Wait())
}
