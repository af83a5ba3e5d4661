// Command avx exercises the code the runtime runs with AVX2 (and the compiler's v3/v4 instructions): large
// memmove and memclr, bytealg's IndexByte, Count, Equal and Compare on long slices, and fused multiply-adds
// (math.FMA, and a*b+c, which GOAMD64=v3 compiles to VFMADD231SD). It prints checksums, so a run under preemu
// can be compared with the native one; a goroutine spins on the same work so that preemption lands in it.
package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"sync"
)

var sink []byte

//go:noinline
func fill(b []byte, seed uint32) {
	for i := range b {
		seed = seed*1664525 + 1013904223
		b[i] = byte(seed >> 24)
	}
}

//go:noinline
func fma(xs []float64) float64 {
	acc := 0.0
	for i, x := range xs {
		acc = x*float64(i) + acc
	}
	return math.FMA(acc, 1.0000001, -acc) + acc
}

//go:noinline
func work(n int, seed uint32) (uint64, float64) {
	a := make([]byte, n)
	fill(a, seed)
	b := make([]byte, n)
	copy(b, a)                    // memmove, large
	copy(b[7:], b[:n-7])          // overlapping, backwards
	var sum uint64
	sum += uint64(bytes.IndexByte(a, 0xAB) + 1)
	sum += uint64(bytes.Count(a, []byte{0x42}))
	if bytes.Equal(a[13:], a[13:]) {
		sum += 3
	}
	sum += uint64(bytes.Compare(a, b) + 2)
	sum += uint64(bytes.Index(a, a[n/2:n/2+17]))
	clear(b[:n/2])                // memclr
	for _, x := range b {
		sum = sum*31 + uint64(x)
	}
	xs := make([]float64, 256)
	for i := range xs {
		xs[i] = float64(a[i]) / 3
	}
	return sum, fma(xs)
}

func main() {
	n := 1 << 16
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	runtime.GOMAXPROCS(2)
	var wg sync.WaitGroup
	out := make([]string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			s, f := work(n+g*1000, uint32(g+1))
			out[g] = fmt.Sprintf("g%d %x %.17g", g, s, f)
		}(g)
	}
	wg.Wait()
	for _, s := range out {
		fmt.Println(s)
	}
	sink = make([]byte, 3<<20) // a large allocation the runtime clears
	fmt.Println("ok", len(sink))
}
