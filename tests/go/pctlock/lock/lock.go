// Package lock: a hand-rolled try-lock whose check and act are two instructions apart (a check-then-act
// window), and the same critical section under sync.Mutex. tests/test_schedules.py explores both with
// `preemu exec --test NAME --schedules N`: the hand-rolled one fails under some schedules, the mutex never.
package lock

import "sync"

var locked int64 // 0: free, 1: held (check-then-act: not atomic)
var count int64  // the shared counter the critical section updates
var inside int64 // goroutines inside the critical section right now
var overlap int64 // times a goroutine found another one inside

//go:noinline
func tryLock() bool {
	if locked == 0 { // check ...
		locked = 1 // ... then act: another goroutine may have checked in between
		return true
	}
	return false
}

//go:noinline
func unlock() { locked = 0 }

// critical: a load, some work, a store (one INCQ to memory would be atomic on one emulated CPU).
//
//go:noinline
func critical() {
	inside++
	if inside > 1 {
		overlap++
	}
	v := count
	v = mix(v)
	count = v
	inside--
}

// mix is the work: a few hundred instructions on registers only (no steps), so a goroutine's rounds outlast
// the 3 us another M sleeps before it steals the goroutine from this P's runnext (runtime/proc.go runqgrab).
//
//go:noinline
func mix(v int64) int64 {
	w := v
	for i := 0; i < 100; i++ {
		w = w*31 + int64(i)
	}
	if w == 42 { // practically never: the loop is not dead code
		return v + 2
	}
	return v + 1
}

// Racy runs n rounds of try-lock / critical section / unlock and returns how many it entered.
func Racy(n int) int64 {
	var got int64
	for i := 0; i < n; i++ {
		if tryLock() {
			critical()
			got++
			unlock()
		}
	}
	return got
}

var mu sync.Mutex

// Locked runs n rounds of the same critical section under a sync.Mutex.
func Locked(n int) int64 {
	for i := 0; i < n; i++ {
		mu.Lock()
		critical()
		mu.Unlock()
	}
	return int64(n)
}

// Reset clears the shared state between tests.
func Reset() { locked, count, inside, overlap = 0, 0, 0, 0 }

// State: the counter and how many overlaps were seen.
func State() (int64, int64) { return count, overlap }
