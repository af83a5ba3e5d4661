// Package bugs2: more bug programs for the verdict corpus (bench/verdicts, issue #46 item 6), one per class
// preemu claims: schedule-dependent bugs (check-then-act, unsafe publication), a bug only an
// asynchronous preemption exposes (a pair written in two stores, read by a sibling, with one P), assembly
// that hides its frame from the unwinder, and GC bugs (a pointer kept as a uintptr, a pointer past the end of
// its object as the only reference, pointers kept as numbers in a heap table, a stale pointer read after its
// slot was handed out again, a finalizer that runs while its object's handle is in use).
//
// Each is shown natively by its test (bugs2_test.go), in a stress loop whose command and rate
// bench/verdicts/corpus.py records. preemu must report each one in the modes that claim its class.
package bugs2

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"unsafe"
)

// ---- schedule: check-then-act ----

type account struct{ bal, paid int }

var acct account
var acctMu sync.Mutex

// fee looks up what a withdrawal costs (the work between the check and the act).
//
//go:noinline
func fee(i int) int {
	f := 0
	for k := 0; k < 32; k++ {
		f += (i + k) % 3
	}
	return f & 0
}

// withdraw checks the balance and then takes the money; the check and the act are not under one lock, so two
// goroutines can both pass the check with one unit left.
//
//go:noinline
func withdraw(n int) {
	for i := 0; i < n; i++ {
		if acct.bal > 0 { // check
			f := fee(i)
			acctMu.Lock()
			acct.bal -= 1 + f // act: the balance may have reached 0 since the check
			acct.paid++
			acctMu.Unlock()
		}
	}
}

// RunWithdraw drains a balance of `bal` from two goroutines that each try n withdrawals.
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

// ---- schedule: check-then-act on a sync.Map (LoadOrStore was meant) ----

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

// connFor returns the connection for key, dialing one if there is none: Load then Store, so two goroutines
// that both miss dial twice, and one connection is lost (leaked) under the other.
//
//go:noinline
func connFor(key string) *conn {
	if c, ok := conns.Load(key); ok {
		return c.(*conn)
	}
	c := dial()
	conns.Store(key, c)
	return c
}

// RunConns asks for the same key from two goroutines; it returns how many connections were dialed.
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

// ---- schedule: unsafe publication (double-checked locking that publishes before it initialises) ----

type table struct {
	names []string
}

var (
	inst   *table
	instMu sync.Mutex
)

// lookup reads the lazily built table: the first check runs without the lock, and the builder publishes the
// pointer before it fills the table, so a reader can see the table empty.
//
//go:noinline
func lookup(i int) string {
	if inst == nil {
		instMu.Lock()
		if inst == nil {
			t := new(table)
			inst = t // bug: published before it is filled
			for k := 0; k < 8; k++ {
				t.names = append(t.names, fmt.Sprint("n", k))
			}
		}
		instMu.Unlock()
	}
	t := inst
	if i >= len(t.names) {
		return ""
	}
	return t.names[i]
}

// RunLookup resets the table and looks up entry 3 from two goroutines; it returns both answers.
func RunLookup() [2]string {
	inst = nil
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

// ---- preemption: a pair written in two stores, read by a sibling, with one P ----

type pair struct{ lo, hi int }

var (
	cur  pair
	torn int
)

// writePairs writes lo and hi = 2*lo in two stores. It makes no call, so with one P nothing but an
// asynchronous preemption between the two stores lets the reader run while the pair is torn.
//
//go:noinline
func writePairs(n int) int {
	s := 0
	for i := 1; i <= n; i++ {
		cur.lo = i
		s += i ^ cur.hi // keeps the stores apart by a few instructions: the window
		cur.hi = 2 * i
	}
	return s
}

// RunPairs runs writePairs with a reader goroutine that counts torn pairs, on one P.
func RunPairs(n int) int {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	cur, torn = pair{}, 0
	stop := make(chan bool)
	done := make(chan bool)
	go func() {
		for {
			select {
			case <-stop:
				done <- true
				return
			default:
			}
			if p := cur; p.hi != 2*p.lo {
				torn++
			}
			runtime.Gosched()
		}
	}()
	runtime.Gosched()
	writePairs(n)
	close(stop)
	<-done
	return torn
}

// ---- assembly: a routine that realigns SP and calls Go code (bugs2_amd64.s) ----

// viaAligned calls visit(n) on a 16-byte-aligned stack it made by writing SP: the unwinder cannot step over
// such a frame (the assembler marks it SPWRITE), so a stack scan while visit runs throws.
func viaAligned(n int) int

// visit is called from viaAligned.
//
//go:noinline
func visit(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i
	}
	return s
}

// ---- GC: a pointer held as a uintptr across a call ----

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
	sink = r // to the heap
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

// spin is a call-free loop with many live variables: while it runs its caller's frame is scanned by its
// stack map and no register keeps what the caller left there.
//
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

// heldAsNumber keeps its record only as a uintptr across spin: a collection then frees it, and the read
// after the call reads freed memory. (go vet reports the conversion back; the compiler builds it.)
//
//go:noinline
func heldAsNumber(n int) int {
	addr := uintptr(unsafe.Pointer(newRec(n)))
	s := spin(n) & 0
	return s + (*rec)(unsafe.Pointer(addr)).sum()
}

// ---- GC: a pointer one past the end of its object as the only reference ----

var sinkInts []int

// width is pastEnd's array length (a variable, so the compiler keeps the walk a walk).
var width = 8

// pastEnd walks an array with a pointer and keeps only where the walk stopped, one past the last element,
// across spin: that pointer is not a reference to the array (it points at whatever follows it), so a
// collection frees the array, and walking back from the end reads freed memory.
//
//go:noinline
func pastEnd(n int) int {
	a := make([]int, width)
	sinkInts = a // to the heap
	sinkInts = nil
	p := unsafe.Pointer(unsafe.SliceData(a))
	for i := 0; i < width; i++ {
		*(*int)(p) = n + i
		p = unsafe.Add(p, 8)
	}
	a = nil
	s := spin(n) & 0
	for i := 0; i < width; i++ {
		p = unsafe.Add(p, -8)
		s += *(*int)(p)
	}
	return s
}

// ---- GC: pointers kept as numbers in a heap table ----

var handles = map[int]uintptr{}

// handleTable keeps four records only as uintptrs in a map (a "handle table"): the collector does not see
// them, so a collection frees the records while the table still names them.
//
//go:noinline
func handleTable(n int) int {
	for i := 0; i < 4; i++ {
		handles[i] = uintptr(unsafe.Pointer(newRec(n + i)))
	}
	s := spin(n) & 0
	for i := 0; i < 4; i++ {
		s += (*rec)(unsafe.Pointer(handles[i])).sum()
	}
	return s
}

// ---- GC: a stale pointer read after its slot was handed out again ----

var keep []*rec

// staleReuse keeps a record as a uintptr while it allocates records of the same size: once a collection
// has freed the record, the allocator can hand its slot out again, and the read through the stale address
// finds another record.
//
//go:noinline
func staleReuse(n int) int {
	addr := uintptr(unsafe.Pointer(newRec(n)))
	s := spin(n) & 0
	keep = keep[:0]
	for i := 0; i < 32; i++ {
		keep = append(keep, newRec(-1))
	}
	return s + (*rec)(unsafe.Pointer(addr)).sum()
}

// ---- GC: a finalizer that closes a handle still in use (runtime.KeepAlive missing) ----

var files [64]int // an fd table: a nonzero entry is an open file

type file struct{ fd int }

var nextFd int

func openFile(v int) *file {
	nextFd = (nextFd + 1) % len(files)
	files[nextFd] = v
	f := &file{fd: nextFd}
	runtime.SetFinalizer(f, func(f *file) { files[f.fd] = 0 })
	return f
}

// readFile uses f's descriptor after f's last use: f is unreachable while spin runs, so a collection queues
// its finalizer, which closes the descriptor before the read (runtime.KeepAlive(f) at the end is the fix).
//
//go:noinline
func readFile(n int) int {
	f := openFile(n)
	fd := f.fd
	s := spin(n) & 0
	for i := 0; i < 50; i++ { // reads with calls between them: the finalizer's goroutine may run meanwhile
		s += files[fd]
		runtime.Gosched()
	}
	return s
}

// ---- GC: a reflect.StringHeader built as a value ----

var sinkBytes []byte

// headerString builds a string from a reflect.StringHeader value whose Data is a uintptr: that word is not a
// pointer to the collector, and the byte slice is dropped, so a collection during spin frees the bytes the
// string then reads. (reflect.StringHeader's documentation forbids exactly this; go vet reports it.)
//
//go:noinline
func headerString(n int) int {
	b := make([]byte, 48)
	sinkBytes = b // to the heap
	sinkBytes = nil
	for i := range b {
		b[i] = byte(n + i)
	}
	hdr := reflect.StringHeader{Data: uintptr(unsafe.Pointer(unsafe.SliceData(b))), Len: len(b)}
	b = nil
	s := spin(n) & 0
	str := *(*string)(unsafe.Pointer(&hdr))
	for i := 0; i < len(str); i++ {
		s += int(str[i])
	}
	return s
}

// ---- schedule: a mutex copied by a value receiver ----

type stats struct {
	mu   sync.Mutex
	hits map[int]int
}

// hit has a value receiver: each call locks its own copy of the mutex, so two goroutines write the shared map
// at once (go vet: "passes lock by value").
//
//go:noinline
func (s stats) hit(k int) {
	s.mu.Lock()
	s.hits[k]++
	s.mu.Unlock()
}

var counts = stats{hits: map[int]int{}}

// hitMany counts n hits on a few keys.
//
//go:noinline
func hitMany(n int) {
	for i := 0; i < n; i++ {
		counts.hit(i % 4)
	}
}

// RunHits counts n hits from each of two goroutines and returns the total.
func RunHits(n int) int {
	clear(counts.hits)
	var wg sync.WaitGroup
	start := make(chan bool)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; hitMany(n) }()
	}
	close(start)
	wg.Wait()
	t := 0
	for _, v := range counts.hits {
		t += v
	}
	return t
}
