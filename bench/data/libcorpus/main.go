// A corpus of correct, library-using Go functions (issue #35): each is swept by bench/bench_verdicts.py, whose
// verdict must be OK (no false failure), and the program's output under preemu must equal a native run's.
// main calls each once with n = 10 + the number of arguments and prints what it returns.
package main

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"maps"
	"math/big"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"
)

type Rec struct {
	ID    int               `json:"id"`
	Name  string            `json:"name"`
	Score float64           `json:"score"`
	Tags  []string          `json:"tags,omitempty"`
	Meta  map[string]string `json:"meta,omitempty"`
}

//go:noinline
func jsonMarshal(n int) string {
	b, _ := json.Marshal(Rec{ID: n, Name: "r", Score: 1.5, Tags: []string{"x"}, Meta: map[string]string{"a": "b"}})
	return string(b)
}

//go:noinline
func jsonUnmarshal(n int) string {
	var r Rec
	err := json.Unmarshal([]byte(fmt.Sprintf(`{"id":%d,"name":"q","tags":["a","b"],"meta":{"k":"v"}}`, n)), &r)
	return fmt.Sprint(err, r.ID, r.Name, r.Tags, r.Meta)
}

var tmpl = template.Must(template.New("t").Parse(`{{range $i, $e := .}}{{if $i}},{{end}}{{$e.Name}}={{$e.ID}}{{end}}`))

//go:noinline
func templ(n int) string {
	var b strings.Builder
	_ = tmpl.Execute(&b, []Rec{{ID: n, Name: "a"}, {ID: n + 1, Name: "b"}})
	return b.String()
}

var re = regexp.MustCompile(`(\w+)@(\w+)\.com`)

//go:noinline
func regex(n int) string {
	s := strings.Repeat("joe@example.com ann@test.com ", n/5)
	return fmt.Sprint(len(re.FindAllStringSubmatch(s, -1)), re.ReplaceAllString("x@y.com", "$2"))
}

var cache sync.Map

//go:noinline
func syncMapUse(n int) int {
	for i := 0; i < n; i++ {
		cache.LoadOrStore(fmt.Sprint(i), i)
	}
	v, _ := cache.Load("3")
	return v.(int)
}

//go:noinline
func mapSorted(n int) string {
	m := map[string]int{}
	for i := 0; i < n; i++ {
		m[strconv.Itoa(i*7%13)] += i
	}
	keys := slices.Sorted(maps.Keys(m))
	return fmt.Sprint(keys, m["3"])
}

//go:noinline
func bigFact(n int) string {
	f := big.NewInt(1)
	for i := 2; i <= 3*n; i++ {
		f.Mul(f, big.NewInt(int64(i)))
	}
	return f.String()[:20]
}

//go:noinline
func compress(n int) int {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	w.Write(bytes.Repeat([]byte("preemption "), n*4))
	w.Close()
	r := flate.NewReader(&buf)
	out, _ := io.ReadAll(r)
	return len(out)
}

//go:noinline
func timeFormat(n int) string {
	t := time.Date(2024, 3, n, 12, 30, 0, 0, time.UTC)
	return t.Add(36*time.Hour).Format(time.RFC3339) + " " + t.Weekday().String()
}

//go:noinline
func workers(n int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n*10; i += 3 {
				mu.Lock()
				total += i
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	return total
}

//go:noinline
func pipeline(n int) int {
	ch := make(chan int)
	out := make(chan int)
	go func() {
		for i := 0; i < n; i++ {
			ch <- i
		}
		close(ch)
	}()
	go func() {
		s := 0
		for v := range ch {
			s += v * v
		}
		out <- s
	}()
	return <-out
}

//go:noinline
func sha(n int) string {
	h := sha256.Sum256([]byte(strings.Repeat("a", n)))
	return base64.StdEncoding.EncodeToString(h[:8])
}

//go:noinline
func sorting(n int) []int {
	s := make([]int, n*3)
	for i := range s {
		s[i] = (i * 7919) % 101
	}
	sort.Ints(s)
	return s[:5]
}

//go:noinline
func wrapErrors(n int) string {
	base := errors.New("base")
	err := fmt.Errorf("layer %d: %w", n, base)
	return fmt.Sprint(errors.Is(err, base), err)
}

//go:noinline
func hashSeed(n int) int {
	var h maphash.Hash
	seen := map[uint64]struct{}{}
	for i := 0; i < n; i++ {
		h.Reset()
		h.WriteString(strconv.Itoa(i % 4))
		seen[h.Sum64()] = struct{}{}
	}
	return len(seen)
}

//go:noinline
func randSum(n int) bool {
	s := 0
	for i := 0; i < n; i++ {
		s += rand.IntN(10)
	}
	return s >= 0 && s < 10*n
}

//go:noinline
func runes(n int) int {
	s := strings.Repeat("héllo wörld ", n)
	return utf8.RuneCountInString(s) + strings.Count(s, "ö")
}

//go:noinline
func builder(n int) string {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%02x", i*i)
	}
	return b.String()
}

//go:noinline
func structMap(n int) int {
	type key struct{ a, b int }
	m := map[key][]string{}
	for i := 0; i < n*2; i++ {
		k := key{i % 3, i % 5}
		m[k] = append(m[k], strconv.Itoa(i))
	}
	return len(m) + len(m[key{1, 1}])
}

//go:noinline
func deferRecover(n int) (r string) {
	defer func() {
		if e := recover(); e != nil {
			r = fmt.Sprint("recovered ", e)
		}
	}()
	var s []int
	return strconv.Itoa(s[n])
}

func main() {
	n := 10 + len(os.Args) - 1
	fmt.Println("jsonMarshal", jsonMarshal(n))
	fmt.Println("jsonUnmarshal", jsonUnmarshal(n))
	fmt.Println("templ", templ(n))
	fmt.Println("regex", regex(n))
	fmt.Println("syncMapUse", syncMapUse(n))
	fmt.Println("mapSorted", mapSorted(n))
	fmt.Println("bigFact", bigFact(n))
	fmt.Println("compress", compress(n))
	fmt.Println("timeFormat", timeFormat(n))
	fmt.Println("workers", workers(n))
	fmt.Println("pipeline", pipeline(n))
	fmt.Println("sha", sha(n))
	fmt.Println("sorting", sorting(n))
	fmt.Println("wrapErrors", wrapErrors(n))
	fmt.Println("hashSeed", hashSeed(n))
	fmt.Println("randSum", randSum(n))
	fmt.Println("runes", runes(n))
	fmt.Println("builder", builder(n))
	fmt.Println("structMap", structMap(n))
	fmt.Println("deferRecover", deferRecover(n))
}
