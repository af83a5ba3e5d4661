// The sync.Pool misuse of issue #46 item 4: use puts its buffer back, then keeps reading it while a sibling
// goroutine Gets it and overwrites it. Natively the sibling runs in parallel: TestUse failed 200 of 200 runs
// of `go test -c` here (Go 1.27.3, 2 CPUs). preemu's legitimate runs (no injection) end with statuses 0 and
// 1, and the sweep reports the failing one as a schedule-dependent failure of the program.
package pool

import "sync"

var pool = sync.Pool{New: func() any { return new([64]byte) }}

// Use fills a pooled buffer, hands it back too early and keeps reading it while a sibling reuses it.
//
//go:noinline
func use(n int, ready chan bool) int {
	b := pool.Get().(*[64]byte)
	for i := range b {
		b[i] = byte(i)
	}
	pool.Put(b) // bug: b is used after Put
	ready <- true
	s := 0
	for j := 0; j < n; j++ {
		for i := range b {
			s += int(b[i])
		}
	}
	return s
}

func Run(n int) (int, int) {
	ready := make(chan bool)
	done := make(chan int)
	go func() {
		<-ready
		b := pool.Get().(*[64]byte)
		for i := range b {
			b[i] = 0xEE
		}
		done <- int(b[0])
	}()
	s := use(n, ready)
	return s, <-done
}
