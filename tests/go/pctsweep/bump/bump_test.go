package bump

import (
	"sync"
	"testing"
)

func TestBump(t *testing.T) {
	total = 0
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Bump(20)
		}()
	}
	s := Work(50)
	wg.Wait()
	if total != 40 || s == 0 {
		t.Fatalf("total %d after 20+20 bumps: an update was lost", total)
	}
}
