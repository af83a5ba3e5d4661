// Command cpuexact runs the standard library's vector code at every GOAMD64 level: crypto/sha256, sha1,
// sha512 and AES-GCM, hash/crc32, encoding/base64, math (Exp, Pow, Log, Sqrt, FMA), slices.Sort,
// strings/bytes search, hash/maphash and maps with int keys (the runtime's AES hash). It prints digests and
// values, so a run under preemu can be compared byte for byte with the native run (tests/test_cpu_exact.py).
// Collections of many small pointer-holding objects: at v4 (an Ice Lake-SP CPUID) the runtime's Green Tea collector
// scans their spans with its AVX-512 packed scanner (GFNI, VBMI, BITALG). Child processes at the level: the binary runs itself (os/exec: vfork and execve) to hash and compute there,
// and forks (a raw fork: the child runs the parent's text, AVX sites included) to hash in the child.
package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unsafe"
)

// what the forked child hashes and writes (no allocation after the fork: only the calling thread is copied)
var (
	forkIn  [4096]byte
	forkOut [2*sha256.Size + 1]byte
)

// forked runs in the child of a raw fork: sha256 (AVX2/SHA-NI at v3/v4) and a write, then exit_group.
//
//go:nosplit
func forkedHash() {
	sum := sha256.Sum256(forkIn[:])
	const hexd = "0123456789abcdef"
	for i, b := range sum {
		forkOut[2*i], forkOut[2*i+1] = hexd[b>>4], hexd[b&15]
	}
	forkOut[len(forkOut)-1] = '\n'
	syscall.RawSyscall(syscall.SYS_WRITE, 1, uintptr(unsafe.Pointer(&forkOut[0])), uintptr(len(forkOut)))
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 3, 0, 0)
}

func childMain() {
	buf := data(20_000, 11)
	x := 0.0
	for i := 1; i <= 300; i++ {
		x += math.Exp(float64(i)/100) + math.Pow(float64(i), 0.7) + math.Log(float64(i)) + math.Sqrt(float64(i))
	}
	fmt.Printf("child sha256 %x sha512 %x crc32 %08x math %.17g\n", sha256.Sum256(buf), sha512.Sum512(buf[:999]),
		crc32.ChecksumIEEE(buf), x)
}

type node struct {
	next *node
	val  int
}

func gcwork() {
	var keep []*node
	for r := 0; r < 3; r++ {
		var head *node
		for i := 0; i < 50000; i++ {
			head = &node{next: head, val: i}
		}
		keep = append(keep, head)
		runtime.GC()
	}
	sum := 0
	for _, h := range keep {
		for n := h; n != nil; n = n.next {
			sum += n.val
		}
	}
	fmt.Println("gc    ", sum)
}

func children() {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	out, err := exec.Command(exe, "child").Output()
	fmt.Printf("exec   %q %v\n", out, err)

	copy(forkIn[:], data(len(forkIn), 5))
	os.Stdout.Sync()
	pid, _, e := syscall.RawSyscall(syscall.SYS_FORK, 0, 0, 0)
	if e != 0 {
		panic(e)
	}
	if pid == 0 {
		forkedHash()
	}
	var ws syscall.WaitStatus
	_, err = syscall.Wait4(int(pid), &ws, 0, nil)
	fmt.Printf("fork   parent %x exited=%v status=%d err=%v\n", sha256.Sum256(forkIn[:]), ws.Exited(), ws.ExitStatus(), err)
}

func data(n int, seed uint32) []byte {
	b := make([]byte, n)
	for i := range b {
		seed = seed*1664525 + 1013904223
		b[i] = byte(seed >> 24)
	}
	return b
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		childMain()
		return
	}
	buf := data(100_000, 7)
	fmt.Printf("sha256 %x\n", sha256.Sum256(buf))
	fmt.Printf("sha1   %x\n", sha1.Sum(buf))
	fmt.Printf("sha512 %x\n", sha512.Sum512(buf))
	fmt.Printf("crc32  %08x %08x\n", crc32.ChecksumIEEE(buf), crc32.Checksum(buf, crc32.MakeTable(crc32.Castagnoli)))

	block, err := aes.NewCipher(buf[:32])
	if err != nil {
		panic(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	sealed := gcm.Seal(nil, buf[32:44], buf[:5000], buf[100:140])
	fmt.Printf("gcm    %x\n", sha256.Sum256(sealed))
	opened, err := gcm.Open(nil, buf[32:44], sealed, buf[100:140])
	fmt.Println("gcm open", err == nil && bytes.Equal(opened, buf[:5000]))

	enc := base64.StdEncoding.EncodeToString(buf[:3000])
	fmt.Printf("base64 %x\n", sha256.Sum256([]byte(enc)))
	dec, err := base64.StdEncoding.DecodeString(enc)
	fmt.Println("base64 round trip", err == nil && bytes.Equal(dec, buf[:3000]))

	var facc float64
	for i := 1; i <= 2000; i++ {
		x := float64(i) / 97
		facc += math.Exp(x/50) + math.Pow(x, 1.37) + math.Log(x) + math.Sqrt(x) + math.FMA(x, 1.0000001, -x)
		facc += math.Sin(x) * math.Cos(x)
	}
	fmt.Printf("math   %.17g %x %x\n", facc, math.Float64bits(math.Exp(-745.1)), math.Float64bits(math.Pow(2.5, -3.3)))

	ints := make([]int, 20000)
	for i := range ints {
		ints[i] = int(uint32(i)*2654435761) % 100000
	}
	slices.Sort(ints)
	fmt.Println("sort  ", ints[0], ints[len(ints)/2], ints[len(ints)-1], slices.IsSorted(ints))
	fs := make([]float64, 5000)
	for i := range fs {
		fs[i] = math.Sin(float64(i))
	}
	slices.Sort(fs)
	fmt.Println("sortf ", fs[0], fs[2500], fs[4999])

	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 400) + "needle-in-a-haystack"
	fmt.Println("search", strings.Index(text, "needle"), strings.LastIndex(text, "lazy"), strings.Count(text, "o"),
		strings.IndexByte(text, 'z'), strings.Contains(text, "haystack"), strings.IndexAny(text, "-"))
	fmt.Println("bytes ", bytes.Index(buf, buf[77777:77790]), bytes.Count(buf, []byte{0x42}), bytes.IndexByte(buf, 0xAB),
		bytes.Equal(buf[1:999], buf[1:999]), bytes.Compare(buf[:500], buf[500:1000]))
	fmt.Println("upper ", strings.ToUpper(text[:44]), strings.EqualFold(text[:44], strings.ToUpper(text[:44])))

	seed := maphash.MakeSeed()
	h1 := maphash.Bytes(seed, buf[:1000])
	h2 := maphash.Bytes(seed, buf[:1000])
	h3 := maphash.String(seed, "hello")
	fmt.Println("maphash", h1 == h2, h1 != h3, maphash.Comparable(seed, 42) == maphash.Comparable(seed, 42))

	m := map[int]int{}
	for i := 0; i < 50000; i++ {
		m[i*7919%100003] += i
	}
	sm := map[string]int{}
	for i := 0; i < 2000; i++ {
		sm[fmt.Sprint("k", i%777)]++
	}
	var sum, n int
	for k, v := range m {
		sum += k ^ v
		n++
	}
	fmt.Println("map   ", n, sum, m[7919], len(sm), sm["k5"])
	gcwork()
	children()
}
