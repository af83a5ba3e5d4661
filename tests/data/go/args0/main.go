// args0: os.Args[0] is the path the program was started by, and the program can open and exec itself by it
// (go test runs a test binary from its build directory with the package directory as its working directory).
package main

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		fmt.Println("child argv0", os.Args[0])
		return
	}
	fmt.Println("argv0", os.Args[0])
	f, err := elf.Open(os.Args[0])
	if err != nil {
		fmt.Println("open:", err)
	} else {
		fmt.Println("elf machine", f.Machine)
		f.Close()
	}
	out, err := exec.Command(os.Args[0], "child").Output()
	fmt.Printf("exec: %q %v\n", out, err)
}
