// Ordinary Go functions of the kinds the synthetic function world could not run (issue #19): each
// depends on package init, the runtime's own state or another goroutine. main calls each once with
// n = 10 + the number of arguments and prints what it returns, so a native run and a run under
// preemu (with a preemption at every boundary of one of them) can be compared line by line.
package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// table is filled by init: a function reading it sees zeros unless package init ran.
var table [16]int

func init() {
	for i := range table {
		table[i] = i*i + 7
	}
}

//go:noinline
func initTable(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += table[i%len(table)] ^ i
	}
	return s
}

var errBase = errors.New("base")

//go:noinline
func wrapped(n int) bool {
	err := fmt.Errorf("layer %d: %w", n, errBase)
	for i := 0; i < n%3; i++ {
		err = fmt.Errorf("again: %w", err)
	}
	return errors.Is(err, errBase) && !errors.Is(err, fs.ErrNotExist)
}

//go:noinline
func sprintf(n int) string {
	return fmt.Sprintf("n=%d hex=%x q=%q", n, n*255, strings.Repeat("ab", n%4))
}

//go:noinline
func recovered(n int) (r int) {
	defer func() {
		if e := recover(); e != nil {
			r = -len(fmt.Sprint(e))
		}
	}()
	var s []int
	return s[n] // always panics: index out of range
}

//go:noinline
func channel(n int) int {
	ch := make(chan int)
	done := make(chan int)
	go func() {
		t := 0
		for v := range ch {
			t += v
		}
		done <- t
	}()
	for i := 0; i < n; i++ {
		ch <- i * i
	}
	close(ch)
	return <-done
}

//go:noinline
func spawn(n int) int {
	res := make(chan int, n)
	for i := 0; i < n; i++ {
		go func(i int) { res <- i * 3 }(i)
	}
	t := 0
	for i := 0; i < n; i++ {
		t += <-res
	}
	return t
}

//go:noinline
func clock(n int) bool {
	start := time.Now()
	s := 0
	for i := 0; i < n*10; i++ {
		s += i
	}
	return time.Since(start) >= 0 && s >= 0
}

//go:noinline
func digest(n int) string {
	sum := sha256.Sum256([]byte(strings.Repeat("preemu", n)))
	return fmt.Sprintf("%x", sum[:8])
}

//go:noinline
func spin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i*i ^ (s >> 3)
	}
	return s
}

type shape interface{ area() int }

type rect struct{ w, h int }

func (r rect) area() int { return r.w * r.h }

type square int

func (s square) area() int { return int(s * s) }

// mixed uses a map, interface method calls, a channel to another goroutine and fmt.
//
//go:noinline
func mixed(n int) string {
	shapes := map[string]shape{}
	for i := 1; i <= n%5+2; i++ {
		shapes[fmt.Sprint("r", i)] = rect{i, i + 1}
		shapes[fmt.Sprint("s", i)] = square(i)
	}
	areas := make(chan int)
	go func() {
		for _, s := range shapes {
			areas <- s.area()
		}
		close(areas)
	}()
	total := 0
	for a := range areas {
		total += a
	}
	return fmt.Sprintf("%d shapes, total area %d", len(shapes), total)
}

// neverCalled is kept by the linker (hook refers to it) but the program never calls it.
//
//go:noinline
func neverCalled(n int) int { return n * 2 }

var hook = neverCalled

func main() {
	if len(os.Args) > 99 {
		hook(1)
	}
	n := 10 + len(os.Args) - 1
	fmt.Println("initTable", initTable(n))
	fmt.Println("wrapped", wrapped(n))
	fmt.Println("sprintf", sprintf(n))
	fmt.Println("recovered", recovered(n))
	fmt.Println("channel", channel(n))
	fmt.Println("spawn", spawn(n))
	fmt.Println("clock", clock(n))
	fmt.Println("digest", digest(n))
	fmt.Println("spin", spin(n*100))
	fmt.Println("mixed", mixed(n))
}
