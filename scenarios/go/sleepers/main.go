// Timers and the network poller: four goroutines sleep 4, 3, 2 and 1 ms and report in wake-up
// order over a channel; main measures the whole. With every thread asleep, virtual time jumps to
// the next timeout (epoll_pwait / futex deadlines), so the program takes ~4 ms of virtual time.
package main

import (
	"fmt"
	"time"
)

func main() {
	start := time.Now()
	done := make(chan int)
	for i := 4; i >= 1; i-- {
		go func(n int) {
			time.Sleep(time.Duration(n) * time.Millisecond)
			done <- n
		}(i)
	}
	for i := 0; i < 4; i++ {
		fmt.Print(<-done, " ")
	}
	fmt.Printf("\nall done after %d ms\n", time.Since(start).Milliseconds())
}
