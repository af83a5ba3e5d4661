// A program that moves around the file system: chdir into a temporary directory and work there with
// relative paths, read a read-only mount, write a read-write one, and fail to see the rest of the host.
// Run with two mounts: <ro dir>:/data (holding in.txt) and <rw dir>:/out:rw.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	start, _ := os.Getwd()
	dir, err := os.MkdirTemp("", "work")
	fmt.Println("mkdirtemp", err == nil)
	fmt.Println("chdir", os.Chdir(dir) == nil)
	wd, _ := os.Getwd()
	fmt.Println("getwd is the temp dir", wd == dir)
	os.WriteFile("notes.txt", []byte("relative"), 0o644)
	b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	fmt.Println("relative write, absolute read:", string(b), err == nil)
	os.Chmod("notes.txt", 0o600)
	st0, _ := os.Stat("notes.txt")
	fmt.Println("chmod:", st0.Mode().Perm())
	os.Mkdir("sub", 0o755)
	os.Chdir("sub")
	wd, _ = os.Getwd()
	fmt.Println("chdir sub:", filepath.Base(wd))
	os.Chdir("..")
	os.Chdir(start)

	in, err := os.ReadFile("/data/in.txt")
	fmt.Printf("ro mount: %q %v\n", in, err == nil)
	err = os.WriteFile("/data/x.txt", []byte("no"), 0o644)
	fmt.Println("ro mount write:", err)

	err = os.WriteFile("/out/result.txt", append([]byte("from the guest: "), in...), 0o644)
	fmt.Println("rw mount write:", err == nil)
	f, _ := os.OpenFile("/out/result.txt", os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("!")
	f.Close()
	os.Rename("/out/result.txt", "/out/final.txt")
	os.Chmod("/out/final.txt", 0o640)
	st, err := os.Stat("/out/final.txt")
	fmt.Println("rw rename, chmod and stat:", err == nil && st.Size() > 0, st.Mode().Perm())

	fmt.Println("chdir /:", os.Chdir("/") == nil)
	entries, _ := os.ReadDir(".")
	seen := []string{}
	for _, e := range entries {
		if e.Name() == "data" || e.Name() == "dev" || e.Name() == "out" || e.Name() == "tmp" {
			seen = append(seen, e.Name())
		}
	}
	fmt.Println("root lists:", seen)
	fmt.Println("root write:", os.WriteFile("/x.txt", nil, 0o644))
	os.Chdir(start)

	_, err = os.Stat("/usr/lib/os-release")
	fmt.Println("the rest of the host:", os.IsNotExist(err))
	err = os.Chdir("/usr")
	fmt.Println("chdir outside:", os.IsNotExist(err))
}
