// A nil pointer dereference: the load faults, the kernel sends SIGSEGV, the runtime's handler
// injects sigpanic and the program dies with Go's panic message and exit status 2.
package main

import "fmt"

type T struct{ x, y int }

var p *T

func main() {
	fmt.Println("before")
	fmt.Println(p.y)
}
