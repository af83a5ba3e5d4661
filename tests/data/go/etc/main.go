// What a program expects of /etc and the loopback (issue #37 item 5): localhost resolves from /etc/hosts, a
// host named in a hosts file mounted over it resolves too, the current user is found in /etc/passwd, and a
// UDP "connection" to a loopback port no one is bound to fails with ECONNREFUSED on the next read, as the
// kernel's ICMP port unreachable makes it fail natively.
package main

import (
	"fmt"
	"net"
	"os"
	"os/user"
	"time"
)

func main() {
	addrs, err := net.LookupHost("localhost")
	fmt.Println("localhost", addrs, err)
	if len(os.Args) > 1 {
		addrs, err = net.LookupHost(os.Args[1])
		fmt.Println(os.Args[1], addrs, err)
	}
	u, err := user.Current()
	fmt.Println("user found", err == nil && u.Uid == fmt.Sprint(os.Getuid()))

	c, err := net.Dial("udp", "127.0.0.1:9")
	if err != nil {
		fmt.Println("dial", err)
		return
	}
	c.Write([]byte("ping"))
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = c.Read(make([]byte, 16))
	fmt.Println("read:", err)
}
