// Values boxed into interfaces (runtime.convT64, convTstring, convTnoptr: iface.go) and read back
// through type switches and method calls. main prints what each function returns natively for n = the
// number of arguments.
package main

import "os"

type shape interface{ area() int }

type square struct{ s int }

type rect struct{ w, h int }

func (q square) area() int { return q.s * q.s }
func (r rect) area() int   { return r.w * r.h }

// boxes keeps ints, strings built at run time and structs in a []any: a GC at any point must find
// each string's bytes through its box (convTstring allocates it with the string type).
//
//go:noinline
func boxes(n int) int {
	var xs []any
	for i := 0; i < n; i++ {
		switch i % 3 {
		case 0:
			xs = append(xs, i*1000)
		case 1:
			xs = append(xs, "s"+string(rune('a'+i%26)))
		default:
			xs = append(xs, rect{i, 2})
		}
	}
	t := 0
	for _, x := range xs {
		switch v := x.(type) {
		case int:
			t += v
		case string:
			t += len(v) + int(v[1])
		case rect:
			t += v.area()
		}
	}
	return t
}

// shapes calls methods through an interface (an indirect CALL through the itab).
//
//go:noinline
func shapes(n int) int {
	var ss []shape
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			ss = append(ss, square{i})
		} else {
			ss = append(ss, rect{i, 3})
		}
	}
	t := 0
	for _, s := range ss {
		t += s.area()
	}
	return t
}

func main() {
	n := len(os.Args) - 1 // the number of arguments: not a constant, so the compiler cannot fold the calls
	println(boxes(n), shapes(n))
}
