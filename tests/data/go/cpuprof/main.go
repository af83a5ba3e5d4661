// runtime/pprof's CPU profiler (issue #37 item 4): StartCPUProfile sets ITIMER_PROF and a per-thread timer on
// CLOCK_THREAD_CPUTIME_ID; the SIGPROFs they send are sampled by the runtime's handler. The program spins
// for a while, stops the profile and says whether the profile has samples naming main.spin.
package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

//go:noinline
func spin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i ^ (s >> 3)
	}
	return s
}

func main() {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	s := spin(30_000_000)
	pprof.StopCPUProfile()
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		fmt.Println("gzip:", err)
		os.Exit(1)
	}
	raw, _ := io.ReadAll(zr)
	fmt.Println("spin", s != 0, "profile", len(raw) > 100, "names main.spin", bytes.Contains(raw, []byte("main.spin")))
}
