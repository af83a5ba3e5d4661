// creds: user and group ids as Linux keeps them for one process: getres*id, set*id to ids the process has,
// setgroups, capget/capset, a child started with SysProcAttr.Credential (setgroups, setgid, setuid in the child, as os/exec's
// tests start one); and syscall.Fchmodat with AT_SYMLINK_NOFOLLOW (fchmodat2, Linux 6.6: a file's mode set,
// a link's EOPNOTSUPP). Only relations and errors are printed, so a run as any user prints the same
// (tests/test_procs.py compares).
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"unsafe"
)

func getres(nr uintptr) (int, int, int) {
	var ids [3]uint32
	syscall.RawSyscall(nr, uintptr(unsafe.Pointer(&ids[0])), uintptr(unsafe.Pointer(&ids[1])), uintptr(unsafe.Pointer(&ids[2])))
	return int(ids[0]), int(ids[1]), int(ids[2])
}

func main() {
	if os.Getenv("CREDS_CHILD") != "" {
		fmt.Println("child: uid, gid kept:", os.Getuid() == os.Geteuid(), os.Getgid() == os.Getegid())
		return
	}
	r, e, s := getres(syscall.SYS_GETRESUID)
	fmt.Println("resuid all the real uid:", r == os.Getuid() && e == os.Geteuid() && s == r)
	r, e, s = getres(syscall.SYS_GETRESGID)
	fmt.Println("resgid all the real gid:", r == os.Getgid() && e == os.Getegid() && s == r)
	fmt.Println("setgid own:", syscall.Setgid(os.Getgid()), "setuid own:", syscall.Setuid(os.Getuid()))
	fmt.Println("setregid -1 -1:", syscall.Setregid(-1, -1), "setresuid own:", syscall.Setresuid(-1, os.Getuid(), -1))
	g, err := os.Getgroups()
	fmt.Println("getgroups:", err, len(g) >= 0)
	fmt.Println("setgroups own:", syscall.Setgroups(g))
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{"CREDS_CHILD=1"}
	cmd.Stdout = os.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}}
	fmt.Println("child with Credential:", cmd.Run())

	hdr := [2]uint32{0x20080522, 0}
	var data [6]uint32
	_, _, e0 := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data)), 0)
	fmt.Println("capget v3:", e0 == 0, "effective is permitted:", data[0] == data[1] && data[3] == data[4])
	hdr = [2]uint32{1, 0}
	_, _, e0 = syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data)), 0)
	fmt.Printf("capget bad version: %v, the kernel's written back: %#x\n", e0, hdr[0])
	hdr = [2]uint32{0x20080522, 0}
	_, _, e0 = syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data)), 0)
	fmt.Println("capset the same sets:", e0 == 0)

	dir, _ := os.MkdirTemp("", "cr")
	defer os.RemoveAll(dir)
	f := filepath.Join(dir, "f")
	os.WriteFile(f, nil, 0o600)
	os.Symlink("f", filepath.Join(dir, "l"))
	fmt.Println("fchmodat nofollow, file:", syscall.Fchmodat(-100, f, 0o640, 0x100))
	fi, _ := os.Stat(f)
	fmt.Println("mode:", fi.Mode().Perm())
	fmt.Println("fchmodat nofollow, link:", syscall.Fchmodat(-100, filepath.Join(dir, "l"), 0o640, 0x100))
}
