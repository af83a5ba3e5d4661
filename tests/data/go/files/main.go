// Reads files as an ordinary program does (issue #21): its working directory, a file in it, a directory
// listing, /dev/null and /dev/zero. Run from this directory, natively and under preemu: the same output.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	wd, err := os.Getwd()
	fmt.Println("getwd", filepath.Base(wd), err == nil)
	src, err := os.ReadFile("main.go")
	fmt.Println("readfile", len(src) > 100, err == nil, strings.SplitN(string(src), "\n", 2)[0])
	st, err := os.Stat("main.go")
	fmt.Println("stat", st.Size() == int64(len(src)), st.IsDir(), err == nil)
	entries, err := os.ReadDir(".")
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	fmt.Println("readdir", names, err == nil)
	f, err := os.Open("main.go")
	if err == nil {
		buf := make([]byte, 10)
		f.Seek(3, io.SeekStart)
		n, _ := f.Read(buf)
		fmt.Println("seek+read", n, string(buf[:n]))
		f.Close()
	}
	fmt.Println("devnull", os.WriteFile(os.DevNull, []byte("discarded"), 0) == nil)
	z, _ := os.Open("/dev/zero")
	zb := make([]byte, 8)
	io.ReadFull(z, zb)
	fmt.Println("devzero", bytes.Equal(zb, make([]byte, 8)))
	_, err = os.Stat("no-such-file")
	fmt.Println("missing", os.IsNotExist(err))
}
