// A compute-bound program for bench/bench_exec.py: sort 1M pseudo-random ints (issue #22's figure).
package main

import (
	"fmt"
	"sort"
)

func main() {
	const n = 1 << 20
	xs := make([]int, n)
	s := uint64(88172645463325252)
	for i := range xs {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		xs[i] = int(s % 1000000)
	}
	sort.Ints(xs)
	fmt.Println(xs[0], xs[n/2], xs[n-1], sort.IntsAreSorted(xs))
}
