// access(2)/faccessat2(2) as Go's os/exec and syscall use them (issue #50): exec.LookPath of an executable
// file (faccessat2 with X_OK), and the access modes on a readable file, a missing one and /tmp.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	dir, _ := os.MkdirTemp("", "lp")
	tool := dir + "/tool"
	os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(dir+"/data", []byte("x"), 0o644)
	p, err := exec.LookPath(tool)
	fmt.Println("lookpath tool", p == tool, err)
	_, err = exec.LookPath(dir + "/data")
	fmt.Println("lookpath data", err != nil)
	fmt.Println("R main.go", syscall.Access("main.go", 4))
	fmt.Println("X main.go", syscall.Access("main.go", 1))
	fmt.Println("F missing", syscall.Access("nope", 0))
	fmt.Println("W tmp", syscall.Access(dir, 2))
	fmt.Println("bad mode", syscall.Faccessat(0, "main.go", 8, 0))
	fmt.Println("bad flag", syscall.Faccessat(-100, "main.go", 4, 2), "AT_EACCESS", syscall.Faccessat(-100, "main.go", 4, 0x200))
	os.RemoveAll(dir)
}
