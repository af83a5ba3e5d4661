package bugs2

import (
	"os"
	"runtime"
	"strconv"
	"testing"
)

// For the native confirmations (bench/verdicts/corpus.py records the commands): BUGS2_GC=1 runs collections
// back to back on a goroutine of its own while the tests run; BUGS2_N sets the size of TestPairs.
func init() {
	if os.Getenv("BUGS2_GC") == "1" {
		go func() {
			for {
				runtime.GC()
			}
		}()
	}
}

func size(def int) int {
	if n, err := strconv.Atoi(os.Getenv("BUGS2_N")); err == nil {
		return n
	}
	return def
}

// rounds is how many times the schedule tests below repeat their run: 1 unless BUGS2_N says.
func rounds() int { return size(1) }

func TestWithdraw(t *testing.T) {
	for r := 0; r < rounds(); r++ {
		if a := RunWithdraw(5, 6); a.bal != 0 || a.paid != 5 {
			t.Fatalf("balance %d, paid %d: want 0, 5", a.bal, a.paid)
		}
	}
}

func TestConns(t *testing.T) {
	for r := 0; r < rounds(); r++ {
		if d := RunConns(); d != 1 {
			t.Fatalf("dialed %d connections for one key", d)
		}
	}
}

func TestLookup(t *testing.T) {
	for r := 0; r < rounds(); r++ {
		if got := RunLookup(); got != [2]string{"n3", "n3"} {
			t.Fatalf("lookups %q", got)
		}
	}
}

func TestPairs(t *testing.T) {
	if n := RunPairs(size(2000)); n != 0 {
		t.Fatalf("reader saw %d torn pairs", n)
	}
}

// The GC tests below: n sets the length of spin (the window); natively BUGS2_N makes it outlast a cycle.

func TestAligned(t *testing.T) {
	n := size(3000)
	if got := viaAligned(n); got != visit(n) {
		t.Fatalf("viaAligned %d", got)
	}
}

func recSum(id int) int { return 7*id + 15 }

func TestHeld(t *testing.T) {
	n := size(500)
	if got := heldAsNumber(n); got != recSum(n) {
		t.Fatalf("sum %d, want %d", got, recSum(n))
	}
}

func TestPastEnd(t *testing.T) {
	n := size(500)
	if got := pastEnd(n); got != 8*n+28 {
		t.Fatalf("sum %d, want %d", got, 8*n+28)
	}
}

func TestHandles(t *testing.T) {
	n := size(500)
	want := recSum(n) + recSum(n+1) + recSum(n+2) + recSum(n+3)
	if got := handleTable(n); got != want {
		t.Fatalf("sum %d, want %d", got, want)
	}
}

func TestStale(t *testing.T) {
	n := size(500)
	if got := staleReuse(n); got != recSum(n) {
		t.Fatalf("sum %d, want %d", got, recSum(n))
	}
}

func TestReadFile(t *testing.T) {
	n := size(500)
	if got := readFile(n); got != 50*n {
		t.Fatalf("read %d, want %d", got, 50*n)
	}
}

func TestHeader(t *testing.T) {
	n := size(500)
	want := 0 // each byte is byte(n+i)
	for i := 0; i < 48; i++ {
		want += int(byte(n + i))
	}
	if got := headerString(n); got != want {
		t.Fatalf("sum %d, want %d", got, want)
	}
}

func TestHits(t *testing.T) {
	for r := 0; r < rounds(); r++ {
		if got := RunHits(100); got != 200 {
			t.Fatalf("%d hits counted, want 200", got)
		}
	}
}
