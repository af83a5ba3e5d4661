package ring

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestSum reads its input from testdata, as go test runs it: in the package directory.
func TestSum(t *testing.T) {
	raw, err := os.ReadFile("testdata/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	r := New(8)
	for _, f := range strings.Fields(string(raw)) {
		v, _ := strconv.Atoi(f)
		r.Push(v)
	}
	r.Scale(3)
	if got, want := r.Sum(), 3*(12+13+14+15+16+17+18+19); got != want {
		t.Fatalf("Sum = %d, want %d", got, want)
	}
	if m := Max(4, 9, 2); m != 9 {
		t.Fatalf("Max = %d", m)
	}
}

func BenchmarkSum(b *testing.B) {
	r := New(64)
	for i := 0; i < 64; i++ {
		r.Push(i)
	}
	for i := 0; i < b.N; i++ {
		r.Sum()
	}
}

func ExampleMax() {
	fmt.Println(Max(1.5, 0.5))
	// Output: 1.5
}

// FuzzPush's seed corpus runs as a test (go test -run '^FuzzPush$' runs the seeds, no fuzzing).
func FuzzPush(f *testing.F) {
	f.Add(3, 5)
	f.Add(8, 100)
	f.Fuzz(func(t *testing.T, size, n int) {
		if size <= 0 || size > 64 || n < 0 || n > 1000 {
			return
		}
		r := New(size)
		for i := 0; i < n; i++ {
			r.Push(i)
		}
		if r.n != min(size, n) {
			t.Fatalf("n = %d", r.n)
		}
	})
}
