// bigargs: a program started with many long arguments runs itself with more (70 x 60 characters, and 100 KB of
// arguments with 1 MB of environment, are well inside Linux's 2 MiB), then with 3 MiB of arguments, which execve refuses: E2BIG.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

func main() {
	if os.Getenv("BIGARGS_CHILD") != "" {
		n := 0
		for _, a := range os.Args[1:] {
			n += len(a)
		}
		e := 0
		for i := 0; i < 10; i++ {
			e += len(os.Getenv(fmt.Sprint("BIG", i)))
		}
		fmt.Println("child:", len(os.Args)-1, "arguments,", n, "bytes; environment", e, "bytes")
		return
	}
	n := 0
	for _, a := range os.Args[1:] {
		n += len(a)
	}
	fmt.Println("started with", len(os.Args)-1, "arguments,", n, "bytes")
	args := make([]string, 200)
	for i := range args {
		args[i] = strings.Repeat(string(rune('a'+i%26)), 500)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{"BIGARGS_CHILD=1"}
	for i := 0; i < 10; i++ {
		cmd.Env = append(cmd.Env, fmt.Sprint("BIG", i, "=")+strings.Repeat("x", 100000))
	}
	out, err := cmd.Output()
	fmt.Printf("%s%v\n", out, err)
	huge := []string{strings.Repeat("y", 100000)}
	for len(huge) < 31 {
		huge = append(huge, huge[0])
	}
	err = exec.Command(os.Args[0], huge...).Run()
	fmt.Println("3 MiB of arguments:", errors.Is(err, syscall.E2BIG), err)
	err = exec.Command(os.Args[0], strings.Repeat("z", 200000)).Run()
	fmt.Println("one argument of 200,000 bytes:", errors.Is(err, syscall.E2BIG))
}
