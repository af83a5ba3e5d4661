// Package bump: two goroutines bump a shared counter with a load and a store a few instructions apart (a lost
// update needs one of them stopped in that window while the other stores), while the test's own goroutine runs
// Work, the function `preemu sweep --func Work` preempts. tests/test_sweep_schedules.py sweeps Work with and
// without `--schedules N`: the chain's turn order alone never splits a bumper's window; a PCT schedule does.
package bump

var total int64 // the shared counter (no lock: the bug)

// Bump adds n to total, one unsynchronised read-modify-write at a time.
//
//go:noinline
func Bump(n int) {
	for i := 0; i < n; i++ {
		v := total // load ...
		v = v*3 + 3
		total = v / 3 // ... store: another goroutine's store in between is lost
	}
}

// Work is the swept function: arithmetic and a slice of its own (no shared state).
//
//go:noinline
func Work(n int) int64 {
	buf := make([]int64, 16)
	var s int64
	for i := 0; i < n; i++ {
		buf[i%16] += int64(i)
		s += buf[(i*7)%16]
	}
	return s
}

// Total is the counter.
func Total() int64 { return total }
