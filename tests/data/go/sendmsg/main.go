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

	// SCM_CREDENTIALS on a datagram socketpair whose receiver set SO_PASSCRED (syscall's TestSCMCredentials)
	for _, typ := range []int{syscall.SOCK_DGRAM, syscall.SOCK_STREAM} {
		pair, err := syscall.Socketpair(syscall.AF_UNIX, typ, 0)
		if err != nil {
			fmt.Println("socketpair", typ, err)
			continue
		}
		syscall.SetsockoptInt(pair[0], syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1)
		ucred := syscall.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
		oob := syscall.UnixCredentials(&ucred)
		err = syscall.Sendmsg(pair[1], []byte("c"), oob, nil, 0)
		oob2 := make([]byte, 10*len(oob))
		n, oobn, flags, _, err2 := syscall.Recvmsg(pair[0], buf, oob2, syscall.MSG_CMSG_CLOEXEC)
		same := false
		if scm, err := syscall.ParseSocketControlMessage(oob2[:oobn]); err == nil && len(scm) == 1 {
			if got, err := syscall.ParseUnixCredentials(&scm[0]); err == nil {
				same = *got == ucred
			}
		}
		fmt.Println("credentials, type", typ, ":", err, n, oobn == len(oob), flags == syscall.MSG_CMSG_CLOEXEC, same, err2)
		// no credentials sent: the kernel adds the sender's
		syscall.Sendmsg(pair[1], []byte("d"), nil, nil, 0)
		n, oobn, _, _, _ = syscall.Recvmsg(pair[0], buf, oob2, 0)
		fmt.Println("credentials added:", n, oobn == len(oob))
		syscall.Close(pair[0])
		syscall.Close(pair[1])
	}

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
