// Symbolic links in a temporary directory, as path/filepath's tests use them: absolute and relative
// links, a link in the middle of a path, `..` after a link (the target's parent, not the link's), a
// dangling link, a loop (ELOOP), Lstat against Stat, Readlink, EvalSymlinks, WalkDir's entry types, and
// removing a link (the target stays). Prints the same natively and under preemu exec.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	root, _ := os.MkdirTemp("", "links")
	rel := func(p string) string { return strings.TrimPrefix(p, root) }
	must := func(err error) {
		if err != nil {
			fmt.Println("error:", strings.ReplaceAll(err.Error(), root, "ROOT"))
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a", "b", "f.txt"), []byte("deep"), 0o644))
	must(os.Symlink(filepath.Join(root, "a", "b"), filepath.Join(root, "abs")))
	must(os.Symlink("a/b", filepath.Join(root, "rel")))
	must(os.Symlink("missing", filepath.Join(root, "dangling")))
	must(os.Symlink("loop2", filepath.Join(root, "loop1")))
	must(os.Symlink("loop1", filepath.Join(root, "loop2")))

	b, err := os.ReadFile(filepath.Join(root, "rel", "f.txt"))
	fmt.Printf("through rel: %q %v\n", b, err)
	b, err = os.ReadFile(filepath.Join(root, "abs", "f.txt"))
	fmt.Printf("through abs: %q %v\n", b, err)
	st, _ := os.Stat(root + "/rel/../b/f.txt") // not filepath.Join: it would clean the .. away lexically
	fmt.Println("rel/.. is a's:", st != nil)
	t, err := os.Readlink(filepath.Join(root, "rel"))
	fmt.Println("readlink:", t, err)
	li, _ := os.Lstat(filepath.Join(root, "rel"))
	si, _ := os.Stat(filepath.Join(root, "rel"))
	fmt.Println("lstat:", li.Mode()&fs.ModeType == fs.ModeSymlink, "stat:", si.IsDir())
	_, err = os.Stat(filepath.Join(root, "dangling"))
	fmt.Println("dangling stat:", errors.Is(err, fs.ErrNotExist))
	_, err = os.Lstat(filepath.Join(root, "dangling"))
	fmt.Println("dangling lstat:", err == nil)
	_, err = os.Open(filepath.Join(root, "loop1"))
	fmt.Println("loop:", errors.Is(err, syscall.ELOOP))
	ev, err := filepath.EvalSymlinks(filepath.Join(root, "rel", "f.txt"))
	fmt.Println("evalsymlinks:", rel(ev), err)
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		fmt.Println("walk:", rel(p), d.Type()&fs.ModeSymlink != 0, d.IsDir())
		return nil
	})
	must(os.Remove(filepath.Join(root, "abs")))
	_, err = os.Stat(filepath.Join(root, "a", "b", "f.txt"))
	fmt.Println("target stays:", err == nil)
	os.RemoveAll(root)
}
