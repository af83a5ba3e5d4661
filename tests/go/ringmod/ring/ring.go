// Package ring is a fixed-size ring of ints, the package preemu's Go-developer tests sweep as its own tests
// call it (issue #41): a method, a generic function and a closure.
package ring

// Ring keeps the last len(buf) values pushed.
type Ring struct {
	buf  []int
	head int
	n    int
}

// New makes a ring of the given size.
func New(size int) *Ring { return &Ring{buf: make([]int, size)} }

// Push adds v, dropping the oldest value when the ring is full.
//
//go:noinline
func (r *Ring) Push(v int) {
	r.buf[(r.head+r.n)%len(r.buf)] = v
	if r.n < len(r.buf) {
		r.n++
	} else {
		r.head = (r.head + 1) % len(r.buf)
	}
}

// Sum adds the values in the ring.
//
//go:noinline
func (r *Ring) Sum() int {
	s := 0
	for i := 0; i < r.n; i++ {
		s += r.buf[(r.head+i)%len(r.buf)]
	}
	return s
}

// Max is the largest of xs (the zero value for none).
//
//go:noinline
func Max[T int | float64](xs ...T) T {
	var m T
	for i, x := range xs {
		if i == 0 || x > m {
			m = x
		}
	}
	return m
}

// Scale multiplies every value by k, through a closure over k.
//
//go:noinline
func (r *Ring) Scale(k int) {
	r.apply(func(v int) int { return v * k })
}

// apply replaces every value v by f(v).
//
//go:noinline
func (r *Ring) apply(f func(int) int) {
	for i := 0; i < r.n; i++ {
		j := (r.head + i) % len(r.buf)
		r.buf[j] = f(r.buf[j])
	}
}
