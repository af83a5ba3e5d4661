// Package fixed2: the bug programs of bench/verdicts/bugs2 with their bug fixed, each as its documentation
// or go vet says to fix it, for the correct side of the verdict corpus: preemu must call each one clean in
// every mode (a verdict that tells the bug from its fix, not one that fails the shape of the code).
package fixed2

import (
	"context"
	"runtime"
	"sync"
	"unsafe"
)

type account struct{ bal, paid int }

var (
	acct   account
	acctMu sync.Mutex
)

//go:noinline
func fee(i int) int {
	f := 0
	for k := 0; k < 32; k++ {
		f += (i + k) % 3
	}
	return f & 0
}

// withdraw checks and acts under one lock.
//
//go:noinline
func withdraw(n int) {
	for i := 0; i < n; i++ {
		f := fee(i)
		acctMu.Lock()
		if acct.bal > 0 {
			acct.bal -= 1 + f
			acct.paid++
		}
		acctMu.Unlock()
	}
}

func RunWithdraw(bal, n int) account {
	acct = account{bal: bal}
	var wg sync.WaitGroup
	start := make(chan bool)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; withdraw(n) }()
	}
	close(start)
	wg.Wait()
	return acct
}

type conn struct{ id int }

var (
	conns  sync.Map
	dialMu sync.Mutex
	dials  int
)

func dial() *conn {
	dialMu.Lock()
	dials++
	c := &conn{id: dials}
	dialMu.Unlock()
	return c
}

// connFor dials under a lock and re-checks there (LoadOrStore alone would still dial twice).
//
//go:noinline
func connFor(key string) *conn {
	if c, ok := conns.Load(key); ok {
		return c.(*conn)
	}
	dialMu.Lock()
	defer dialMu.Unlock()
	if c, ok := conns.Load(key); ok {
		return c.(*conn)
	}
	dials++
	c := &conn{id: dials}
	conns.Store(key, c)
	return c
}

func RunConns() int {
	conns.Clear()
	dials = 0
	var wg sync.WaitGroup
	start := make(chan bool)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; connFor("db") }()
	}
	close(start)
	wg.Wait()
	return dials
}

type table struct{ names []string }

var (
	inst     *table
	instOnce *sync.Once
)

// lookup builds the table once (sync.Once publishes it filled).
//
//go:noinline
func lookup(i int) string {
	instOnce.Do(func() {
		t := new(table)
		for k := 0; k < 8; k++ {
			t.names = append(t.names, "n"+string(rune('0'+k)))
		}
		inst = t
	})
	if i >= len(inst.names) {
		return ""
	}
	return inst.names[i]
}

func RunLookup() [2]string {
	inst, instOnce = nil, new(sync.Once)
	var got [2]string
	var wg sync.WaitGroup
	start := make(chan bool)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func(g int) { defer wg.Done(); <-start; got[g] = lookup(3) }(g)
	}
	close(start)
	wg.Wait()
	return got
}

type rec struct {
	id   int
	vals [6]int
}

var sink *rec

func newRec(id int) *rec {
	r := &rec{id: id}
	for i := range r.vals {
		r.vals[i] = id + i
	}
	sink = r
	sink = nil
	return r
}

func (r *rec) sum() int {
	s := r.id
	for _, v := range r.vals {
		s += v
	}
	return s
}

//go:noinline
func spin(n int) int {
	a, b, c, d, e, f, g, h, k, m := 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
	for i := 0; i < n; i++ {
		a += i ^ b
		b += a >> 1
		c ^= b + d
		d += c * 3
		e ^= d >> 2
		f += e ^ g
		g ^= f << 1
		h += g ^ k
		k ^= h >> 3
		m += k ^ a
	}
	return a + b + c + d + e + f + g + h + k + m
}

// heldAsPointer keeps its record as an unsafe.Pointer across the call: the collector sees it.
//
//go:noinline
func heldAsPointer(n int) int {
	p := unsafe.Pointer(newRec(n))
	s := spin(n) & 0
	return s + (*rec)(p).sum()
}

var sinkInts []int
var width = 8

// pastEnd's walk keeps the array's base (a reference) and an index, not a pointer past the end.
//
//go:noinline
func pastEnd(n int) int {
	a := make([]int, width)
	sinkInts = a
	sinkInts = nil
	base := unsafe.Pointer(unsafe.SliceData(a))
	i := 0
	for ; i < width; i++ {
		*(*int)(unsafe.Add(base, i*8)) = n + i
	}
	a = nil
	s := spin(n) & 0
	for i > 0 {
		i--
		s += *(*int)(unsafe.Add(base, i*8))
	}
	return s
}

var handles = map[int]*rec{}

// handleTable keeps the records as pointers in its map.
//
//go:noinline
func handleTable(n int) int {
	for i := 0; i < 4; i++ {
		handles[i] = newRec(n + i)
	}
	s := spin(n) & 0
	for i := 0; i < 4; i++ {
		s += handles[i].sum()
	}
	return s
}

var files [64]int

type file struct{ fd int }

var nextFd int

func openFile(v int) *file {
	nextFd = (nextFd + 1) % len(files)
	files[nextFd] = v
	f := &file{fd: nextFd}
	runtime.SetFinalizer(f, func(f *file) { files[f.fd] = 0 })
	return f
}

// readFile keeps f alive until its last read of the descriptor (runtime.KeepAlive).
//
//go:noinline
func readFile(n int) int {
	f := openFile(n)
	fd := f.fd
	s := spin(n) & 0
	for i := 0; i < 50; i++ {
		s += files[fd]
		runtime.Gosched()
	}
	runtime.KeepAlive(f)
	return s
}

// deadline stops its workers through a context: each worker sums until cancelled or done.
//
//go:noinline
func deadline(n int) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan int)
	for w := 0; w < 2; w++ {
		go func(w int) {
			s := 0
			for i := 0; i < n; i++ {
				select {
				case <-ctx.Done():
					out <- -1
					return
				default:
				}
				s += i * w
			}
			out <- s
		}(w)
	}
	a, b := <-out, <-out
	return a + b
}
