//go:build goexperiment.simd

// Command simdspin keeps values in Y registers across the iterations of a loop (simd/archsimd, which exists
// under GOEXPERIMENT=simd) while the main goroutine forces GC cycles: the GC's suspendG preempts the spinning
// goroutine asynchronously, so asyncPreempt must save and restore Y0-Y15 (or Z0-Z31 and K0-K7 on an AVX-512
// CPU) with their upper halves live. It prints the lanes, which a lost upper half would change.
package main

import (
	"fmt"
	"os"
	"runtime"
	"simd/archsimd"
	"strconv"
	"sync/atomic"
)

var done atomic.Bool

//go:noinline
func spin(n int, out []int64) {
	a := archsimd.BroadcastInt64x4(1)
	b := archsimd.LoadInt64x4Array(&[4]int64{1, 2, 3, 4})
	s := 0
	for i := 0; i < n; i++ {
		a = a.Add(b)
		for j := 0; j < 40; j++ { // scalar work between vector operations: where the GC's signal lands
			s += j ^ i
		}
	}
	a.Store(out)
	out[0] += int64(s & 1)
	done.Store(true)
}

func main() {
	n := 3000
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	runtime.GOMAXPROCS(2)
	out := make([]int64, 4)
	go spin(n, out)
	cycles := 0
	for !done.Load() {
		runtime.GC()
		cycles++
	}
	fmt.Println(out, cycles > 0)
}
