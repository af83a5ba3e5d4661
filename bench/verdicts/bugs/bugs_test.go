package bugs

import (
	"os"
	"strconv"
	"testing"
	"time"
)

func TestLost(t *testing.T) {
	if got := RunLost(2000); got != 4000 {
		t.Fatalf("counter %d, want 4000", got)
	}
}

func TestClose(t *testing.T) {
	if RunClose() {
		t.Fatal("done closed twice")
	}
}

func TestMemo(t *testing.T) {
	if got := RunMemo(200); got != 2*2646700 {
		t.Fatalf("memo %d", got)
	}
}

func TestCountAll(t *testing.T) {
	if got := countAll(8); got != 8 {
		t.Fatalf("counted %d of 8", got)
	}
}

func TestAppend(t *testing.T) {
	if got := RunAppend(500); got != 1000 {
		t.Fatalf("len %d, want 1000", got)
	}
}

func TestLazy(t *testing.T) {
	if got := RunLazy(); got != 10 {
		t.Fatalf("limit %d, want 10", got)
	}
}

func TestScan(t *testing.T) {
	RunScan(200)
}

// wakeRounds: ROUNDS from the environment (a native stress loop sets it high), 10 by default.
func wakeRounds() int {
	if n, err := strconv.Atoi(os.Getenv("ROUNDS")); err == nil {
		return n
	}
	return 10
}

func TestWakeup(t *testing.T) {
	if !RunWakeup(wakeRounds(), 100*time.Millisecond) {
		t.Fatal("lost wakeup: the waiter still sleeps 100ms after its post")
	}
}
