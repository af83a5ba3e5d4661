// sendmsg: sendmsg/recvmsg with SCM_RIGHTS over a socketpair, WriteMsgUnix/ReadMsgUnix, WriteMsgUDP, and
// mknod (a regular file; a FIFO where mknod is refused) as Linux answers them (tests/test_linux_exec.py
// compares the output with a native run; the FIFO line prints the errno or "made").
package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

func main() {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		fmt.Println("socketpair:", err)
		return
	}
	r, w, _ := os.Pipe()
	err = syscall.Sendmsg(fds[0], []byte("with a pipe"), syscall.UnixRights(int(w.Fd())), nil, 0)
	fmt.Println("sendmsg:", err)
	w.Close()
	buf, oob := make([]byte, 64), make([]byte, syscall.CmsgSpace(4))
	n, oobn, flags, _, err := syscall.Recvmsg(fds[1], buf, oob, 0)
	fmt.Printf("recvmsg: %q oobn=%d flags=%d err=%v\n", buf[:n], oobn, flags, err)
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err == nil && len(msgs) == 1 {
		got, err := syscall.ParseUnixRights(&msgs[0])
		if err == nil && len(got) == 1 {
			f := os.NewFile(uintptr(got[0]), "passed")
			f.Write([]byte("through the passed descriptor\n"))
			f.Close()
			b := make([]byte, 64)
			m, _ := r.Read(b)
			fmt.Printf("pipe read: %q\n", b[:m])
		}
	}
	// no room for the descriptor: MSG_CTRUNC
	syscall.Sendmsg(fds[0], []byte("x"), syscall.UnixRights(1), nil, 0)
	n, oobn, flags, _, err = syscall.Recvmsg(fds[1], buf, nil, 0)
	fmt.Println("no control buffer:", n, oobn, flags&syscall.MSG_CTRUNC != 0, err)
	// a plain message with no control part
	syscall.Sendmsg(fds[0], []byte("plain"), nil, nil, 0)
	n, oobn, flags, _, err = syscall.Recvmsg(fds[1], buf, oob, 0)
	fmt.Printf("plain: %q %d %d %v\n", buf[:n], oobn, flags, err)

	// UDP through WriteMsgUDP / ReadMsgUDP
	a, _ := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	b, _ := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	_, _, err = a.WriteMsgUDP([]byte("datagram"), nil, b.LocalAddr().(*net.UDPAddr))
	fmt.Println("WriteMsgUDP:", err)
	n, _, _, from, err := b.ReadMsgUDP(buf, nil)
	fmt.Printf("ReadMsgUDP: %q from a: %v %v\n", buf[:n], from.Port == a.LocalAddr().(*net.UDPAddr).Port, err)

	dir, _ := os.MkdirTemp("", "mknod")
	defer os.RemoveAll(dir)
	reg := filepath.Join(dir, "reg")
	fmt.Println("mknod regular:", syscall.Mknod(reg, syscall.S_IFREG|0o600, 0))
	fmt.Println("mknod regular again:", syscall.Mknod(reg, syscall.S_IFREG|0o600, 0))
	st, err := os.Stat(reg)
	fmt.Println("it is a regular file:", err == nil && st.Mode().IsRegular())
	fmt.Println("mknod in a missing directory:", syscall.Mknod(filepath.Join(dir, "no", "x"), syscall.S_IFIFO|0o600, 0))
	fmt.Println("mknod a directory:", syscall.Mknod(filepath.Join(dir, "d"), syscall.S_IFDIR|0o700, 0))
}
