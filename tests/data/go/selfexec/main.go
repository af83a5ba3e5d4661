// Runs itself as a child process (os/exec of os.Args[0] with an environment switch, the go test re-exec
// pattern) and reports what it sees: the child's output, exit status and signal, pipes both ways, an
// execve that fails. preemu's run must print what a native run prints.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

func child(role string) {
	switch role {
	case "exit":
		fmt.Printf("child args %q\n", os.Args[1:])
		fmt.Fprintln(os.Stderr, "child to stderr")
		os.Exit(7)
	case "upper":
		data, _ := io.ReadAll(os.Stdin)
		fmt.Print(strings.ToUpper(string(data)))
	case "sleep":
		fmt.Println("ready")
		time.Sleep(time.Hour)
		fmt.Println("woke up")
	}
}

func self(role string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SELFEXEC_ROLE="+role)
	return cmd
}

func main() {
	if role := os.Getenv("SELFEXEC_ROLE"); role != "" {
		child(role)
		return
	}
	// 1. exit status, stdout and stderr
	var out, errb bytes.Buffer
	cmd := self("exit", "a", "b c")
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	fmt.Printf("exit: %q %q err=%v code=%d as=%v\n", out.String(), errb.String(), err, cmd.ProcessState.ExitCode(),
		errors.As(err, &ee))
	// 2. a pipe each way
	cmd = self("upper")
	cmd.Stdin = strings.NewReader("hello through two pipes\n")
	got, err := cmd.Output()
	fmt.Printf("upper: %q err=%v success=%v\n", got, err, cmd.ProcessState.Success())
	// 3. a signal to a child that waits
	cmd = self("sleep")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		fmt.Println("start:", err)
		return
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	fmt.Printf("sleep: child said %q\n", line)
	cmd.Process.Signal(syscall.SIGTERM)
	err = cmd.Wait()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	fmt.Printf("sleep: err=%v signaled=%v signal=%v exited=%v code=%d\n", err, ws.Signaled(), ws.Signal(),
		ws.Exited(), cmd.ProcessState.ExitCode())
	fmt.Println("signal after wait:", cmd.Process.Signal(syscall.SIGTERM))
	// 4. an execve that fails
	err = exec.Command("/nonexistent/prog").Run()
	fmt.Println("missing:", err)
}
