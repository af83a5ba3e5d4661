// Correct code whose memory differs from one run to the next through the runtime's randomness (issue #35):
// encoding/json and text/template fill reflect's and their own sync.Map caches, whose hash-trie seeds come
// from the M's random state; maphash.MakeSeed and a map's iteration order do too. A preempted goroutine may
// resume on another M and draw other numbers, as a native run may. main calls each function once with
// n = 10 + the number of arguments and prints what it returns.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"os"
	"sync"
	"text/template"
)

type Item struct {
	Name  string            `json:"name"`
	Count int               `json:"count"`
	Tags  []string          `json:"tags"`
	Attrs map[string]string `json:"attrs"`
}

//go:noinline
func jsonRoundTrip(n int) string {
	in := Item{Name: "widget", Count: n, Tags: []string{"a", "b"}, Attrs: map[string]string{"k": "v", "x": "y"}}
	b, err := json.Marshal(in)
	if err != nil {
		return err.Error()
	}
	var out Item
	if err := json.Unmarshal(b, &out); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s %d %v", b, out.Count, out.Tags)
}

var page = template.Must(template.New("p").Parse("{{.Name}} x{{.Count}}{{range .Tags}} #{{.}}{{end}}"))

//go:noinline
func render(n int) string {
	var buf bytes.Buffer
	if err := page.Execute(&buf, Item{Name: "gadget", Count: n, Tags: []string{"t1", "t2"}}); err != nil {
		return err.Error()
	}
	return buf.String()
}

// M is a global sync.Map: its hash-trie seed is drawn at its first use.
var M sync.Map

//go:noinline
func syncMap(n int) int {
	for i := 0; i < n; i++ {
		M.Store(i, i*i)
	}
	s := 0
	M.Range(func(k, v any) bool { s += v.(int); return true })
	return s
}

//go:noinline
func distinct(n int) int {
	seed := maphash.MakeSeed()
	seen := map[uint64]bool{}
	for i := 0; i < n; i++ {
		seen[maphash.String(seed, fmt.Sprint(i%7))] = true
	}
	return len(seen)
}

// firstKey's result is the map's iteration order: it differs between native runs too.
//
//go:noinline
func firstKey(n int) int {
	m := map[int]bool{}
	for i := 0; i < n; i++ {
		m[i] = true
	}
	for k := range m {
		return k
	}
	return -1
}

func main() {
	n := 10 + len(os.Args) - 1
	fmt.Println("jsonRoundTrip", jsonRoundTrip(n))
	fmt.Println("render", render(n))
	fmt.Println("syncMap", syncMap(n))
	fmt.Println("distinct", distinct(n))
	fmt.Println("firstKey", firstKey(n) >= 0)
}
