// f is re-entered through g before its first invocation returns (tests/test_survivors.py): each deeper
// invocation returns to the same address in g first, on the same goroutine, below the first one's frame. The
// first call's result is 807 (f(0) is 100, each level doubles and adds one).
package main

import "fmt"

//go:noinline
func f(n int) int {
	if n == 0 {
		return 100
	}
	return g(n-1) + 1
}

//go:noinline
func g(n int) int { return f(n) * 2 }

func main() {
	fmt.Println(g(3) / 2)
}
