// Package count is issue #46's canonical concurrent program: goroutines add to a global under a sync.Mutex.
// While add is descheduled (preempted, or its thread off the CPU) the other goroutine legitimately adds its
// share, so `total` at add's return depends on the schedule; the test's sum at the end does not.
package count

import "sync"

var (
	mu    sync.Mutex
	total int
)

//go:noinline
func add(n int) {
	for i := 0; i < n; i++ {
		mu.Lock()
		total++
		mu.Unlock()
	}
}

// Count runs `workers` goroutines that each add n, and returns the total.
func Count(workers, n int) int {
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); add(n) }()
	}
	wg.Wait()
	return total
}
