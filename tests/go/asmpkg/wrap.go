package main

import "os"

// callSum is a Go function (register ABI) around the assembly sumAsm, so a sweep can enter it
// with --reg RAX=n and run through the ABI0 call into Go-syntax assembly and back.
//
//go:noinline
func callSum(n int) int {
	return sumAsm(n) + 1
}

func init() {
	if len(os.Args) > 100 { // never true; keeps callSum linked
		println(callSum(len(os.Args)))
	}
}
