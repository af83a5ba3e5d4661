// A program that tries to get out of its mounts (tests/test_containment.py): run with <host a>:/m/a (read-only,
// holding file.txt, sub/inner.txt and links in_link, abs_file, rel_file, abs_dir, rel_dir, rel_sibling) and
// <host rw>:/m/rw:rw (holding links out_file and out_dir), and the host path of a secret file as its argument.
// Each line is what one attempt got: Linux in a mount namespace holding only those mounts prints the same.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

func short(err error) string {
	if err == nil {
		return "<nil>"
	}
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err.Error()
	case errors.As(err, &le):
		return le.Err.Error()
	}
	return err.Error()
}

func main() {
	secret := strings.TrimPrefix(os.Args[1], "/")
	for _, p := range []string{"/m/a/file.txt", "/m/a/in_link", "/m/ab/x.txt", "/m/a/../ab/x.txt",
		"/m/a/../../../../../" + secret, "/m/a/abs_file", "/m/a/rel_file", "/m/a/abs_dir/s.txt",
		"/m/a/rel_dir/s.txt", "/m/a/rel_sibling", "/proc/self/root/" + secret} {
		b, err := os.ReadFile(p)
		if err == nil {
			fmt.Printf("read %s: %q %v\n", p, b, err)
		} else {
			fmt.Printf("read %s: %s\n", p, short(err))
		}
	}
	try := func(what string, err error) { fmt.Printf("%s: %s\n", what, short(err)) }
	try("write /m/a/file.txt", os.WriteFile("/m/a/file.txt", []byte("x"), 0o644))
	_, err := os.Create("/m/a/new.txt")
	try("create /m/a/new.txt", err)
	_, err = os.OpenFile("/m/a/file.txt", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	try("create excl /m/a/file.txt", err)
	try("truncate /m/a/file.txt", os.Truncate("/m/a/file.txt", 0))
	try("chmod /m/a/file.txt", os.Chmod("/m/a/file.txt", 0o777))
	try("remove /m/a/file.txt", os.Remove("/m/a/file.txt"))
	try("mkdir /m/a/d", os.Mkdir("/m/a/d", 0o755))
	try("rename /m/a/file.txt", os.Rename("/m/a/file.txt", "/m/a/moved.txt"))
	try("rename to /m/rw", os.Rename("/m/a/file.txt", "/m/rw/stolen.txt"))
	try("symlink /m/a/l", os.Symlink("/", "/m/a/l"))
	try("link /m/a/h", os.Link("/m/a/file.txt", "/m/a/h"))
	try("link to /m/rw", os.Link("/m/a/file.txt", "/m/rw/h"))
	try("write /m/rw/out_file", os.WriteFile("/m/rw/out_file", []byte("x"), 0o644))
	try("create /m/rw/out_dir/new.txt", os.WriteFile("/m/rw/out_dir/new.txt", []byte("x"), 0o644))
	try("create /m/rw/w2.txt", os.WriteFile("/m/rw/w2.txt", []byte("x"), 0o644))
}
