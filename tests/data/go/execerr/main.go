// execerr: what execve answers for files it cannot run, made in a temporary directory (tests/test_procs.py
// compares the output with a native run): no x bit, a directory, a script whose interpreter is missing, a
// file in no known format, a missing file.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

func main() {
	dir, _ := os.MkdirTemp("", "execerr")
	defer os.RemoveAll(dir)
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), mode)
		os.Chmod(p, mode)
		return p
	}
	cases := []struct{ name, path string }{
		{"0644 file", write("plain", "\x7fELF not really\n", 0o644)},
		{"directory", dir},
		{"script, missing interpreter", write("script", "#!/no/such/interpreter\necho hi\n", 0o755)},
		{"no format", write("text", "just words\n", 0o755)},
		{"missing", filepath.Join(dir, "missing")},
	}
	for _, c := range cases {
		err := exec.Command(c.path).Run()
		var errno syscall.Errno
		if errors.As(err, &errno) {
			fmt.Printf("%s: %d %v\n", c.name, int(errno), errno)
		} else {
			fmt.Printf("%s: %v\n", c.name, err)
		}
	}
}
