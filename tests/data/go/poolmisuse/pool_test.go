package pool

import "testing"

func TestUse(t *testing.T) {
	if s, _ := Run(3); s != 3*2016 {
		t.Fatalf("sum %d, want %d", s, 3*2016)
	}
}
