// Package concur: correct concurrent Go for the verdict corpus (bench/verdicts): every sweep of these
// functions, in every mode, must be clean. Each function runs its own goroutines.
package concur

import (
	"context"
	"sync"
	"sync/atomic"
)

//go:noinline
func workerPool(jobs int) int {
	in, out := make(chan int), make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range in {
				out <- j * j
			}
		}()
	}
	go func() {
		for j := 0; j < jobs; j++ {
			in <- j
		}
		close(in)
	}()
	go func() { wg.Wait(); close(out) }()
	s := 0
	for v := range out {
		s += v
	}
	return s
}

var (
	once   sync.Once
	config []int
)

//go:noinline
func onceInit(n int) int {
	var wg sync.WaitGroup
	sums := make([]int, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			once.Do(func() {
				for i := 0; i < n; i++ {
					config = append(config, i)
				}
			})
			for _, v := range config {
				sums[g] += v
			}
		}(g)
	}
	wg.Wait()
	return sums[0] + sums[1] + sums[2] + sums[3]
}

var hits atomic.Int64

//go:noinline
func atomics(n int) int64 {
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				hits.Add(1)
			}
		}()
	}
	wg.Wait()
	return hits.Load()
}

//go:noinline
func cancelled(n int) int {
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan int)
	go func() {
		c := 0
		for {
			select {
			case <-ctx.Done():
				got <- c
				return
			default:
				c++
				if c == n {
					cancel()
				}
			}
		}
	}()
	return <-got
}

type store struct {
	mu sync.RWMutex
	m  map[int]int
}

//go:noinline
func rwStore(n int) int {
	s := &store{m: map[int]int{}}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			s.mu.Lock()
			s.m[i%7] += i
			s.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			s.mu.RLock()
			_ = s.m[i%7]
			s.mu.RUnlock()
		}
	}()
	wg.Wait()
	t := 0
	for _, v := range s.m {
		t += v
	}
	return t
}

//go:noinline
func pipeline(n int) int {
	a, b := make(chan int, 2), make(chan int, 2)
	go func() {
		for i := 0; i < n; i++ {
			a <- i
		}
		close(a)
	}()
	go func() {
		for v := range a {
			b <- v + 1
		}
		close(b)
	}()
	s := 0
	for v := range b {
		s += v
	}
	return s
}

// mailbox: a flag and a condition variable, checked and waited for under the lock (the lost wakeup's twin:
// bench/verdicts/bugs awaitPost; bench/bench_schedules.py's, not in the sweep corpus).
type mailbox struct {
	mu    sync.Mutex
	cond  *sync.Cond
	ready bool
}

//go:noinline
func awaitLocked(m *mailbox) {
	m.mu.Lock()
	for !m.ready {
		m.cond.Wait()
	}
	m.mu.Unlock()
}

// wakeup runs n rounds of one waiter and one poster and returns how many waiters woke.
//
//go:noinline
func wakeup(n int) int {
	woke := 0
	for i := 0; i < n; i++ {
		m := &mailbox{}
		m.cond = sync.NewCond(&m.mu)
		done := make(chan struct{})
		go func() { awaitLocked(m); close(done) }()
		go func() {
			m.mu.Lock()
			m.ready = true
			m.cond.Broadcast()
			m.mu.Unlock()
		}()
		<-done
		woke++
	}
	return woke
}
