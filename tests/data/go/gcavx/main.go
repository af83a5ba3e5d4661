// A use after free through AVX loads, for `preemu sweep --gc --cpu v3|v4` (issue #46): hidden keeps its only
// reference to a 256-byte buffer as an XOR-masked uintptr across a call, so a GC while spin runs frees it,
// and bytes.IndexByte then scans the freed buffer. At GOAMD64=v3 and up IndexByte's loop loads 32 bytes at a
// time with VMOVDQU (internal/bytealg/indexbyte_amd64.s avx2_loop), an instruction preemu executes itself;
// at v1 the same scan is SSE MOVOU loads, the engine's own. (go vet rejects this; the compiler does not.)
package main

import (
	"bytes"
	"fmt"
	"os"
	"unsafe"
)

// mask1 and mask2 are equal at run time (set in main), so the compiler cannot cancel x ^ mask1 ^ mask2.
var mask1, mask2 uintptr

//go:noinline
func makeBuf() *[256]byte {
	b := new([256]byte)
	for i := range b {
		b[i] = byte(i) | 1
	}
	return b
}

// drop takes a buffer and lets it go.
//
//go:noinline
func drop(b *[256]byte) {}

// spin is a call-free loop: while it runs, its caller's frame is scanned precisely.
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

//go:noinline
func hidden(n int) int {
	x := uintptr(unsafe.Pointer(makeBuf())) ^ mask1
	drop(makeBuf()) // the registers the allocator leaves behind now point into this buffer, not the first
	s := spin(n)
	b := unsafe.Slice((*byte)(unsafe.Pointer(x^mask2)), 256) // no load: the scan is the first access
	return s + bytes.IndexByte(b, 0)
}

func main() {
	mask1, mask2 = 0x5a5a5a5a5a5a5a5a, 0x5a5a5a5a5a5a5a5a
	n := 20
	if len(os.Args) > 1 {
		fmt.Sscan(os.Args[1], &n)
	}
	fmt.Println("hidden", hidden(n))
}
