// filetimes: file times and hard links in a temporary directory, as Linux keeps them: os.Chtimes's atime and
// mtime apart, a zero time left alone (UTIME_OMIT), a bad tv_nsec EINVAL, a symbolic link's own times
// (AT_SYMLINK_NOFOLLOW), futimens on a descriptor, a write stamping the wall-clock time; os.Link's second name
// of one file (nlink, the same inode, data through either), EPERM for a directory, EEXIST, a rename onto
// the file's other name doing nothing; chown and lchown; the umask on new files; ENAMETOOLONG for a long
// name or path. os's TestChtimes*, TestHardLink, TestGetwdDeep and TestChown* need them (tests/test_linux_exec.py
// compares with a native run).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

func times(path string, follow bool) (int64, int64) {
	var st syscall.Stat_t
	if follow {
		syscall.Stat(path, &st)
	} else {
		syscall.Lstat(path, &st)
	}
	return st.Atim.Nano(), st.Mtim.Nano()
}

func utimensat(dirfd int, path string, ts *[2]syscall.Timespec, flags int) error {
	var p *byte
	if path != "" {
		p, _ = syscall.BytePtrFromString(path)
	}
	_, _, e := syscall.Syscall6(syscall.SYS_UTIMENSAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(ts)), uintptr(flags), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func main() {
	dir, _ := os.MkdirTemp("", "ft")
	defer os.RemoveAll(dir)
	say := func(a ...any) { fmt.Print(strings.ReplaceAll(fmt.Sprintln(a...), dir, "DIR")) }
	f := filepath.Join(dir, "f")
	os.WriteFile(f, []byte("one"), 0o644)
	fi, _ := os.Stat(f)
	say("a write stamps about now:", time.Since(fi.ModTime()).Abs() < time.Minute)

	a := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	m := time.Date(2011, 12, 13, 14, 15, 16, 17, time.UTC)
	say("chtimes:", os.Chtimes(f, a, m))
	at, mt := times(f, true)
	say("atime, mtime:", at == a.UnixNano(), mt == m.UnixNano())
	say("chtimes zero atime:", os.Chtimes(f, time.Time{}, a))
	at, mt = times(f, true)
	say("atime kept, mtime set:", at == a.UnixNano(), mt == a.UnixNano())
	bad := [2]syscall.Timespec{{Sec: 1, Nsec: 1e9}, {Sec: 1, Nsec: 0}}
	say("tv_nsec 1e9:", utimensat(-100, f, &bad, 0))
	omit := [2]syscall.Timespec{{Nsec: 1<<30 - 2}, {Nsec: 1<<30 - 2}}
	say("both omitted, no such file:", utimensat(-100, filepath.Join(dir, "none"), &omit, 0))
	say("no such file:", os.Chtimes(filepath.Join(dir, "none"), a, m))
	say("bad flag:", utimensat(-100, f, nil, 0x4))

	l := filepath.Join(dir, "l")
	os.Symlink("f", l)
	set := [2]syscall.Timespec{syscall.NsecToTimespec(m.UnixNano()), syscall.NsecToTimespec(m.UnixNano())}
	say("nofollow:", utimensat(-100, l, &set, 0x100))
	_, lm := times(l, false)
	_, fm := times(f, true)
	say("the link's own mtime set, the file's kept:", lm == m.UnixNano(), fm == a.UnixNano())
	fd, _ := syscall.Open(f, syscall.O_RDONLY, 0)
	now := [2]syscall.Timespec{{Nsec: 1<<30 - 1}, {Nsec: 1<<30 - 2}}
	say("futimens now/omit:", utimensat(fd, "", &now, 0))
	at, mt = times(f, true)
	say("atime about now, mtime kept:", time.Since(time.Unix(0, at)).Abs() < time.Minute, mt == a.UnixNano())
	say("futimens with a flag:", utimensat(fd, "", &now, 0x100))
	syscall.Close(fd)

	g := filepath.Join(dir, "g")
	say("link:", os.Link(f, g))
	fi, _ = os.Stat(f)
	gi, _ := os.Stat(g)
	say("one file, two names:", os.SameFile(fi, gi), fi.Sys().(*syscall.Stat_t).Nlink)
	os.WriteFile(g, []byte("two"), 0o644)
	b, _ := os.ReadFile(f)
	say("written through the other name:", string(b))
	say("rename onto its other name:", os.Rename(f, g))
	_, err1 := os.Stat(f)
	_, err2 := os.Stat(g)
	say("both names stay:", err1, err2)
	say("remove one:", os.Remove(f))
	b, _ = os.ReadFile(g)
	gi, _ = os.Stat(g)
	say("the other reads on:", string(b), gi.Sys().(*syscall.Stat_t).Nlink)
	say("link a directory:", os.Link(dir, filepath.Join(dir, "d")))
	os.WriteFile(f, nil, 0o644)
	say("link onto a name:", os.Link(g, f))
	say("link a missing file:", os.Link(filepath.Join(dir, "none"), filepath.Join(dir, "x")))

	syscall.Umask(0o027)
	os.WriteFile(filepath.Join(dir, "masked"), nil, 0o666)
	os.Mkdir(filepath.Join(dir, "maskeddir"), 0o777)
	mi, _ := os.Stat(filepath.Join(dir, "masked"))
	di, _ := os.Stat(filepath.Join(dir, "maskeddir"))
	say("umask 027: a file 0666 is", mi.Mode().Perm(), "a directory 0777 is", di.Mode().Perm(), "old umask:", syscall.Umask(0o022) == 0o027)
	fmt.Println("chown -1 1:", os.Chown(g, -1, 1), "lchown of a link:", os.Lchown(l, -1, 2))
	gi, _ = os.Stat(g)
	li, _ := os.Lstat(l)
	st, lt := gi.Sys().(*syscall.Stat_t), li.Sys().(*syscall.Stat_t)
	fmt.Println("gid 1, the link's 2, uids kept:", st.Gid, lt.Gid, st.Uid == uint32(os.Getuid()), lt.Uid == uint32(os.Getuid()))
	say("chown of no file:", os.Chown(filepath.Join(dir, "none"), -1, -1))
	_, err := os.Stat(filepath.Join(dir, strings.Repeat("a", 256)))
	say("a 256-byte name:", err != nil && err.(*os.PathError).Err == syscall.ENAMETOOLONG)
	_, err = os.Stat(strings.Repeat("/x", 2100))
	say("a 4200-byte path:", err != nil && err.(*os.PathError).Err == syscall.ENAMETOOLONG)
}
