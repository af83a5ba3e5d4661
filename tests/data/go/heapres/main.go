// Results and globals compared through the heap (emu/goruntime/heapgraph.py, tests/test_heapgraph.py): build
// returns the same object graph on its first two calls, allocated in a different order and with its maps
// filled in a different order, so only the addresses (and the maps' bucket placement) differ; its third
// call differs from the first in one deep field only. Every kind the walker reads is in T.
package main

import (
	"errors"
	"fmt"
	"os"
	"unsafe"
)

type Inner struct {
	A int32
	B string
	F float64
	Ok bool
}

type Item struct {
	Name string
	N    int
}

type shape interface{ area() int }

type rect struct{ w, h int }

func (r rect) area() int { return r.w * r.h }

type T struct {
	Count int
	In    Inner
	Pairs map[int]*Item // two keys for each item, met before Items: which key names it first is the map's order
	Items []*Item
	Tags  []string
	M     map[string]int
	ByID  map[int]*Item
	Big   map[int]int
	Any   any
	Sh    shape
	Next  *T
	Alias *Item
	F     func(int) int
	Ch    chan int
	Arr   [3]int16
	Bytes []byte
	U     unsafe.Pointer
	Nilp  *Item
}

// cfg is set by build: a main-package global whose heap is compared too.
var cfg *T

var calls int

var sink []*Item

func double(x int) int { return 2 * x }

//go:noinline
func build(n int, order int, change int) *T {
	calls++
	t := &T{Count: n * 1000, In: Inner{A: -7, B: "inner", F: 1.5, Ok: true}}
	items := make([]*Item, n)
	if order == 0 {
		for i := 0; i < n; i++ {
			items[i] = &Item{Name: fmt.Sprint("item", i), N: i * i}
		}
	} else {
		for i := n - 1; i >= 0; i-- {
			sink = append(sink, &Item{Name: "garbage"}) // moves every later allocation
			items[i] = &Item{Name: fmt.Sprint("item", i), N: i * i}
		}
	}
	if change == 1 {
		items[3].N = 985148
	}
	t.Items = items
	t.Pairs = map[int]*Item{}
	for j := 0; j < n; j++ {
		i := j
		if order != 0 {
			i = n - 1 - j
		}
		t.Pairs[100+i] = items[i]
		t.Pairs[i] = items[i]
	}
	t.Tags = []string{"a", "bc"}
	t.M = map[string]int{}
	t.ByID = map[int]*Item{}
	t.Big = map[int]int{}
	for j := 0; j < n; j++ {
		i := j
		if order != 0 {
			i = n - 1 - j
		}
		t.M[items[i].Name] = i
		t.ByID[i] = items[i]
	}
	for j := 0; j < 40; j++ {
		i := j
		if order != 0 {
			i = 39 - j
			t.Big[1000+i] = 0 // inserted, then deleted: tombstones and growth differ
			delete(t.Big, 1000+i)
		}
		t.Big[i] = i * 3
	}
	t.Any = Inner{A: 3, B: "boxed"}
	t.Sh = rect{2, 3}
	t.Next = &T{Count: 1, Next: t} // a cycle: t.Next.Next == t
	t.Alias = items[2]
	t.F = double
	t.Ch = make(chan int, 4)
	t.Ch <- 1
	t.Arr = [3]int16{1, -2, 3}
	t.Bytes = []byte("hi\x00")
	t.U = unsafe.Pointer(t)
	cfg = t
	return t
}

// multi's results go to integer and floating registers and, for the array, to the stack (ABIInternal).
//
//go:noinline
func multi(n int) (f float64, i int32, a [2]int, err error, b []byte, ok bool) {
	return float64(n) / 2, int32(-n), [2]int{n, -n}, errors.New("multi"), []byte{byte(n), 0xff}, n > 0
}

func main() {
	n := 6 + len(os.Args) - 1
	a := build(n, 0, 0)
	b := build(n, 1, 0)
	c := build(n, 0, 1)
	f, i, arr, err, bs, ok := multi(n)
	fmt.Println(a.Count, b.Count, c.Count, len(sink), calls, f, i, arr, err, bs, ok)
}
