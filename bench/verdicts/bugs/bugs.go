// Package bugs: concurrency bugs for the verdict corpus (bench/verdicts), each shown natively by its test in
// a stress loop (bench/verdicts/corpus.py records how often). preemu must report each one (a schedule
// finding, a final-state difference or a crash), never OK.
package bugs

import (
	"runtime"
	"sync"
	"time"
)

var counter int

// lostUpdate adds without any lock: two goroutines' load/add/store pairs interleave.
//
//go:noinline
func lostUpdate(n int) {
	for i := 0; i < n; i++ {
		v := counter
		counter = v + 1 + v>>62
	}
}

var (
	closed bool
	done   = make(chan struct{})
)

// closeOnce checks a flag and then acts on it without a lock: two goroutines may both see it unset.
//
//go:noinline
func closeOnce() {
	if !closed {
		runtime.Gosched()
		closed = true
		close(done)
	}
}

var cache = map[int]int{}

// memo fills a shared map without a lock: concurrent map writes (the runtime's fatal error) under some schedules.
//
//go:noinline
func memo(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		if _, ok := cache[i]; !ok {
			cache[i] = i * i
		}
		s += cache[i]
	}
	return s
}

// RunLost runs lostUpdate on two goroutines.
func RunLost(n int) int {
	counter = 0
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); lostUpdate(n) }()
	}
	wg.Wait()
	return counter
}

// RunClose calls closeOnce from two goroutines.
func RunClose() (panicked bool) {
	closed, done = false, make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if recover() != nil {
					mu.Lock()
					panicked = true
					mu.Unlock()
				}
			}()
			closeOnce()
		}()
	}
	wg.Wait()
	return panicked
}

// RunMemo runs memo on two goroutines over a fresh map.
func RunMemo(n int) int {
	cache = map[int]int{}
	var wg sync.WaitGroup
	sums := make([]int, 2)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) { defer wg.Done(); sums[g] = memo(n) }(g)
	}
	wg.Wait()
	return sums[0] + sums[1]
}

// countAll counts in goroutines that call wg.Add themselves: Wait may return before they started.
//
//go:noinline
func countAll(n int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	c := 0
	for g := 0; g < n; g++ {
		go func() {
			wg.Add(1) // bug: Add must happen before the goroutine starts
			defer wg.Done()
			mu.Lock()
			c++
			mu.Unlock()
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return c
}

var shared []int

// appendShared appends to a global slice from two goroutines without a lock: elements are lost.
//
//go:noinline
func appendShared(n int) {
	for i := 0; i < n; i++ {
		shared = append(shared, i)
	}
}

// RunAppend runs appendShared on two goroutines and returns the slice's length.
func RunAppend(n int) int {
	shared = nil
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); appendShared(n) }()
	}
	wg.Wait()
	return len(shared)
}

type conf struct {
	ready bool
	limit int
}

var inst *conf

// lazy publishes its instance before initialising it (double-checked locking without the second check's
// lock): another goroutine may read limit 0.
//
//go:noinline
func lazy() int {
	if inst == nil {
		c := &conf{}
		inst = c
		runtime.Gosched()
		c.limit = 10
		c.ready = true
	}
	return inst.limit
}

// RunLazy calls lazy from two goroutines and returns the smaller limit either saw.
func RunLazy() int {
	inst = nil
	var wg sync.WaitGroup
	got := make([]int, 2)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) { defer wg.Done(); got[g] = lazy() }(g)
	}
	wg.Wait()
	return min(got[0], got[1])
}

var table = map[int]int{}

// scanTable iterates a map another goroutine writes: the runtime's fatal error under some schedules.
//
//go:noinline
func scanTable() int {
	s := 0
	for k, v := range table {
		s += k + v
	}
	return s
}

// RunScan writes table while scanTable iterates it.
func RunScan(n int) int {
	table = map[int]int{}
	for i := 0; i < 64; i++ {
		table[i] = i
	}
	stop := make(chan bool)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				table[i%64+64] = i
			}
		}
	}()
	s := 0
	for i := 0; i < n; i++ {
		s += scanTable()
	}
	close(stop)
	return s
}

// mailbox: a flag and a condition variable; post sets the flag under the lock and wakes every waiter.
type mailbox struct {
	mu    sync.Mutex
	cond  *sync.Cond
	ready bool
}

func newMailbox() *mailbox {
	m := &mailbox{}
	m.cond = sync.NewCond(&m.mu)
	return m
}

// awaitPost checks the flag without the lock before it waits: a post between the check and Wait finds no
// waiter to wake, and this goroutine then sleeps for ever (a lost wakeup). Not in the sweep corpus
// (bench/verdicts/corpus.py): bench/bench_schedules.py's, found by `exec --schedules`; a sweep says OK.
//
//go:noinline
func awaitPost(m *mailbox) {
	if !m.ready {
		m.mu.Lock()
		m.cond.Wait()
		m.mu.Unlock()
	}
}

//go:noinline
func post(m *mailbox) {
	m.mu.Lock()
	m.ready = true
	m.cond.Broadcast()
	m.mu.Unlock()
}

// RunWakeup runs n rounds of one waiter and one poster; false when a waiter was still asleep `patience` after
// its round began (its wakeup was lost: it would sleep for ever).
func RunWakeup(n int, patience time.Duration) bool {
	for i := 0; i < n; i++ {
		m := newMailbox()
		done := make(chan struct{})
		go func() { awaitPost(m); close(done) }()
		go post(m)
		select {
		case <-done:
		case <-time.After(patience):
			return false
		}
	}
	return true
}
