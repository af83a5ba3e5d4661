// Hello world: the smallest whole program preemu exec runs (startup, sysmon, one write, exit_group).
package main

import "fmt"

func main() {
	fmt.Println("hello, world")
}
