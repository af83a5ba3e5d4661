package hello

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestGreeting(t *testing.T) {
	if got := Greeting("gopher"); got != "hello, gopher" {
		t.Fatalf("Greeting = %q", got)
	}
}

func ExampleGreeting() {
	fmt.Println(Greeting("world"))
	// Output: hello, world
}

// TestTempDir writes and reads back a file in t.TempDir (a writable /tmp), renames it, lists the directory,
// and lets testing remove the tree.
func TestTempDir(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte(Greeting("disk")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "sub", "b.txt")
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(b)
	if err != nil || string(got) != "hello, disk" {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != "sub" || !entries[0].IsDir() {
		t.Fatalf("ReadDir = %v, %v", entries, err)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatalf("Stat of the renamed file: %v", err)
	}
}
