package lock

import (
	"sync/atomic"
	"testing"
	"time"
)

var flag int32

// TestSpinHandoff: a goroutine spins on a flag that another sets after a sleep. Natively and under preemu's
// default scheduler it always passes. Under a strict priority scheduler it livelocks whenever the spinner's
// thread outranks every thread that could run the setter (the M that fires the timer, sysmon that would
// preempt the spinner): the schedules' fairness bound (emu/linux/schedule.py FAIR_BUDGET) is what ends it.
func TestSpinHandoff(t *testing.T) {
	atomic.StoreInt32(&flag, 0)
	done := make(chan bool)
	go func() {
		time.Sleep(time.Millisecond)
		atomic.StoreInt32(&flag, 1)
	}()
	go func() {
		for atomic.LoadInt32(&flag) == 0 {
		}
		done <- true
	}()
	<-done
}
