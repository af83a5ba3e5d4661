// cpuclocks: CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID count CPU time, not wall time: a sleep
// adds next to nothing, a spin adds about its length (tests/test_timers.py compares with a native run).
package main

import (
	"fmt"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

func clock(id int) (time.Duration, syscall.Errno) {
	var ts syscall.Timespec
	_, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano()), e
}

func main() {
	runtime.LockOSThread()
	p0, _ := clock(2)
	t0, _ := clock(3)
	time.Sleep(50 * time.Millisecond)
	p1, _ := clock(2)
	t1, _ := clock(3)
	fmt.Println("a 50 ms sleep adds under 10 ms of CPU time:", p1-p0 < 10*time.Millisecond, t1-t0 < 10*time.Millisecond)
	start := time.Now()
	for time.Since(start) < 20*time.Millisecond {
	}
	t2, _ := clock(3)
	self, _ := clock(-6) // MAKE_PROCESS_CPUCLOCK(0, CPUCLOCK_SCHED): the caller's process
	thread, _ := clock(-2) // MAKE_THREAD_CPUCLOCK(0, CPUCLOCK_SCHED): the calling thread
	fmt.Println("a 20 ms spin adds 15-40 ms of thread CPU time:", t2-t1 > 15*time.Millisecond && t2-t1 < 40*time.Millisecond)
	fmt.Println("process clock of pid 0 >= thread's:", self >= t2, "thread clock of tid 0 >= before:", thread >= t2)
	_, e := clock(99)
	fmt.Println("clock 99:", e)
	var res syscall.Timespec
	_, _, e = syscall.Syscall(syscall.SYS_CLOCK_GETRES, 3, uintptr(unsafe.Pointer(&res)), 0)
	fmt.Println("getres thread cputime:", res.Sec, res.Nsec, e == 0)
}
