// Package spin: a test that goes on spinning after the function a sweep watches has returned (issue #51: the
// sweep's uninterrupted run to the program's end was minutes of silence; it is a bounded, named error).
package spin

//go:noinline
func Sum(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i
	}
	return s
}
