// A slice rebuilt from a reflect.SliceHeader whose Data word (a uintptr) was its array's only reference
// across an allocation: the misuse reflect.SliceHeader's documentation warns about (go vet reports it; the
// compiler builds it). A GC whose stack scan meets rebuild's frame at a call frees the array; a GC at an
// asynchronous safe point inside rebuild may keep it, when a register the compiler left stale still points
// into it (which registers those are depends on the compiler's version).
package main

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strconv"
	"unsafe"
)

var sink []byte

//go:noinline
func rebuild(n int) int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	data := (*reflect.SliceHeader)(unsafe.Pointer(&s)).Data
	s = nil
	sink = make([]byte, 48) // an allocation while the array is held only as a number
	var t []int
	h := (*reflect.SliceHeader)(unsafe.Pointer(&t))
	h.Data, h.Len, h.Cap = data, n, n
	sum := 0
	for _, v := range t {
		sum += v
	}
	return sum
}

// rebuildGC is rebuild with a collection where rebuild allocates (what the sweep's cycle at that call does):
// natively, with GODEBUG=clobberfree=1 (the collector overwrites what it frees), the sum is wrong every time.
//
//go:noinline
func rebuildGC(n int) int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	data := (*reflect.SliceHeader)(unsafe.Pointer(&s)).Data
	s = nil
	runtime.GC()
	var t []int
	h := (*reflect.SliceHeader)(unsafe.Pointer(&t))
	h.Data, h.Len, h.Cap = data, n, n
	sum := 0
	for _, v := range t {
		sum += v
	}
	return sum
}

func main() {
	n := 64
	if len(os.Args) > 1 && os.Args[1] == "gc" {
		fmt.Println(rebuildGC(n), n*(n-1)/2)
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "stress" {
		// Natively, with collections back to back and GODEBUG=clobberfree=1 (a freed object is overwritten):
		// some sums come out wrong.
		iters, _ := strconv.Atoi(os.Args[2])
		go func() {
			for {
				runtime.GC()
			}
		}()
		bad := 0
		for i := 0; i < iters; i++ {
			if rebuild(n) != n*(n-1)/2 {
				bad++
			}
		}
		fmt.Println("wrong sums", bad)
		return
	}
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	fmt.Println(rebuild(n))
}
