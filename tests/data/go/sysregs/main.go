// What SYSCALL leaves behind (issue #37 item 4): RCX holds the address after the SYSCALL instruction and R11
// the RFLAGS it ran with (Intel SDM, SYSCALL; Linux's SYSRET keeps both), and user code runs with IF set.
package main

import "fmt"

func rawsyscall(nr uintptr) (rax, rcx, r11 uintptr)
func flags() uintptr

func main() {
	_, rcx, r11 := rawsyscall(39) // getpid
	fmt.Printf("rcx=%#x r11.IF=%t rflags.IF=%t\n", rcx, r11&0x200 != 0, flags()&0x200 != 0)
}
