// /proc/self/maps as Linux prints it (runtime/pprof reads it to name a profile's mappings): the binary's own
// PT_LOAD segments with their permissions, file offsets, device, inode and path; the bss past the file's last
// page anonymous; the vDSO executable and the stack writable; at least two executable mappings with a name
// (what pprof's TestConvertCPUProfile needs). Addresses of mmap'd regions vary natively (ASLR): not printed.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

func main() {
	exe, _ := os.Executable()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer f.Close()
	st, _ := f.Stat()
	fmt.Println("a regular file of size", st.Size(), st.Mode().IsRegular())
	sc := bufio.NewScanner(f)
	named, bss, lines := 0, false, 0
	var afterBinary bool
	seen := map[string]string{}
	for sc.Scan() {
		lines++
		fields := strings.Fields(sc.Text())
		name := ""
		if len(fields) >= 6 {
			name = fields[5]
		}
		switch {
		case name == exe:
			fmt.Println(sc.Text())
			afterBinary = true
			continue
		case afterBinary && name == "":
			bss = fields[1] == "rw-p" && fields[2] == "00000000" && fields[3] == "00:00" && fields[4] == "0"
		case strings.HasPrefix(name, "["):
			seen[name] = fields[1]
		}
		afterBinary = false
		if strings.Contains(fields[1], "x") && name != "" {
			named++
		}
	}
	fmt.Println("bss after the binary, anonymous:", bss)
	fmt.Println("[vdso]", seen["[vdso]"], "[stack]", seen["[stack]"])
	fmt.Println("executable mappings with a name besides the binary's:", named >= 1, "lines:", lines > 5)
	w, err := os.OpenFile("/proc/self/maps", os.O_WRONLY, 0)
	fmt.Println("open for writing (root):", err)
	if err == nil {
		_, err = w.Write([]byte("x"))
		fmt.Println("a write:", err)
		w.Close()
	}
}
