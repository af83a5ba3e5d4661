package lock

import (
	"os"
	"strconv"
	"sync"
	"testing"
)

// rounds per goroutine: small, so a schedule's steps (shared-memory accesses of this package) are few.
func rounds() int {
	if n, err := strconv.Atoi(os.Getenv("ROUNDS")); err == nil {
		return n
	}
	return 20
}

func run(t *testing.T, body func(int) int64) {
	Reset()
	n := rounds()
	var wg sync.WaitGroup
	var got [2]int64
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			got[g] = body(n)
		}(g)
	}
	wg.Wait()
	c, o := State()
	if c != got[0]+got[1] || o != 0 {
		t.Fatalf("count %d after %d+%d entries, %d overlaps: two goroutines were inside at once", c, got[0], got[1], o)
	}
}

func TestRacyLock(t *testing.T) { run(t, Racy) }

func TestMutexLock(t *testing.T) { run(t, Locked) }
