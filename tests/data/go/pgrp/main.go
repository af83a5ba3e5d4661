// pgrp: process groups and sessions as Linux keeps them (getpgid, getpgrp, setpgid, getsid, setsid, kill and
// wait4 on a group), through os/exec's SysProcAttr{Setpgid, Pgid, Setsid} as syscall's own tests use them
// (syscall/exec_unix_test.go TestSetpgid, TestPgid). Only relations are printed, so a native run started by
// any parent prints the same (tests/test_procs.py compares).
package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

func self(role string, attr *syscall.SysProcAttr) (*exec.Cmd, io.WriteCloser) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PGRP_ROLE="+role)
	cmd.SysProcAttr = attr
	cmd.Stdout = os.Stdout
	in, _ := cmd.StdinPipe()
	if err := cmd.Start(); err != nil {
		fmt.Println("start:", err)
		os.Exit(1)
	}
	return cmd, in
}

func pgid(pid int) int {
	g, err := syscall.Getpgid(pid)
	if err != nil {
		fmt.Println("getpgid:", err)
	}
	return g
}

func getsid(pid int) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func main() {
	switch os.Getenv("PGRP_ROLE") {
	case "wait":
		io.ReadAll(os.Stdin)
		return
	case "session":
		sid, _ := getsid(0)
		fmt.Println("child with Setsid: leads its session and group:", sid == os.Getpid(), syscall.Getpgrp() == os.Getpid())
		_, err := syscall.Setsid()
		fmt.Println("child: setsid again:", err)
		return
	}
	me := syscall.Getpgrp()
	sid, _ := getsid(0)
	sid2, _ := getsid(os.Getpid())
	fmt.Println("getpgid(0) is getpgrp:", pgid(0) == me, "getsid(0) is getsid(pid):", sid == sid2)

	plain, plainIn := self("wait", nil)
	fmt.Println("a plain child is in its parent's group:", pgid(plain.Process.Pid) == me)
	a, aIn := self("wait", &syscall.SysProcAttr{Setpgid: true})
	fmt.Println("Setpgid: the child leads a group of its own:", pgid(a.Process.Pid) == a.Process.Pid, pgid(a.Process.Pid) != me)
	b, bIn := self("wait", &syscall.SysProcAttr{Setpgid: true, Pgid: a.Process.Pid})
	fmt.Println("Pgid: the second child joins the first's group:", pgid(b.Process.Pid) == a.Process.Pid)
	bsid, _ := getsid(b.Process.Pid)
	fmt.Println("and stays in the session:", bsid == sid)

	fmt.Println("setpgid of an exec'd child:", syscall.Setpgid(plain.Process.Pid, 0))
	fmt.Println("setpgid to a negative group:", syscall.Setpgid(0, -1))
	fmt.Println("setpgid of a process that is no child:", syscall.Setpgid(1, 0))
	fmt.Println("setpgid to a group that does not exist:", syscall.Setpgid(0, 0x7ffffff0))
	_, err := syscall.Getpgid(0x7ffffff0)
	fmt.Println("getpgid of no process:", err)

	s, sIn := self("session", &syscall.SysProcAttr{Setsid: true})
	sIn.Close()
	s.Wait()

	var ws syscall.WaitStatus
	_, err = syscall.Wait4(-a.Process.Pid, &ws, syscall.WNOHANG, nil)
	fmt.Println("wait4 on the group before it ends:", err)
	fmt.Println("kill the group:", syscall.Kill(-a.Process.Pid, syscall.SIGTERM))
	got := 0
	for i := 0; i < 2; i++ {
		pid, err := syscall.Wait4(-a.Process.Pid, &ws, 0, nil)
		if err == nil && (pid == a.Process.Pid || pid == b.Process.Pid) && ws.Signal() == syscall.SIGTERM {
			got++
		}
	}
	fmt.Println("wait4(-pgid) reaps both, killed by SIGTERM:", got)
	_, err = syscall.Wait4(-a.Process.Pid, &ws, 0, nil)
	fmt.Println("then the group has no child:", err)
	aIn.Close()
	bIn.Close()
	plainIn.Close()
	fmt.Println("the plain child ends well:", plain.Wait())
}
