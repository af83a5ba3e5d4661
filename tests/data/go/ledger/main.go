// An ordinary library-heavy function (issue #39 item 2): ledger uses a map, fmt, errors, a channel to another
// goroutine and sha256 in one call, the kind of function whose full sweep is long and whose boundaries are
// mostly the same PCs again. main calls it once with n (the first argument, default 10) and prints what it
// returns, so a native run and a run under preemu can be compared.
package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
)

var errOverdrawn = errors.New("overdrawn")

type entry struct {
	name   string
	amount int
}

//go:noinline
func post(balances map[string]int, e entry) error {
	b := balances[e.name] + e.amount
	if b < 0 {
		return fmt.Errorf("post %q (%d): %w", e.name, e.amount, errOverdrawn)
	}
	balances[e.name] = b
	return nil
}

//go:noinline
func ledger(n int) string {
	balances := map[string]int{}
	lines := make(chan string)
	done := make(chan [32]byte)
	go func() {
		var digest [32]byte
		for s := range lines {
			sum := sha256.Sum256([]byte(s))
			for j := range digest {
				digest[j] ^= sum[j]
			}
		}
		done <- digest
	}()
	refused := 0
	for i := 0; i < n; i++ {
		e := entry{fmt.Sprintf("acct-%d", i%7), (i*37)%23 - 9}
		if err := post(balances, e); errors.Is(err, errOverdrawn) {
			refused++
			continue
		}
		lines <- fmt.Sprint(e.name, "=", balances[e.name])
	}
	close(lines)
	digest := <-done
	names := make([]string, 0, len(balances))
	for k := range balances {
		names = append(names, k)
	}
	sort.Strings(names)
	return fmt.Sprintf("%d accounts, %d refused, first %s=%d, digest %x", len(names), refused, names[0],
		balances[names[0]], digest[:6])
}

func main() {
	n := 10
	if len(os.Args) > 1 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	fmt.Println(ledger(n))
}
