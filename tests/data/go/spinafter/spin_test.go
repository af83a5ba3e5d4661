package spin

import "testing"

var sink int

func TestSpinAfter(t *testing.T) {
	sink = Sum(10)
	for {
		sink++
	}
}

func TestEnds(t *testing.T) {
	sink = Sum(10)
}
