// Package main holds a function written in Go-syntax assembly (sum_amd64.s).
package main

import "os"

// sumAsm returns 0 + 1 + ... + (n-1), computed by sum_amd64.s.
func sumAsm(n int) int

// addAsm returns a + b.
func addAsm(a, b int) int

func main() {
	n := len(os.Args) + 9
	os.Exit(sumAsm(n) + addAsm(n, 1) - 45 - n - 1)
}
