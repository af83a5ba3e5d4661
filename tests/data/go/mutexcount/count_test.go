package count

import "testing"

func TestCount(t *testing.T) {
	if got := Count(2, 100); got != 200 {
		t.Fatalf("total %d, want 200", got)
	}
}
