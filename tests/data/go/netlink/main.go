// The loopback interface as Go reads it through AF_NETLINK/NETLINK_ROUTE dumps (syscall/netlink_linux.go
// NetlinkRIB, net/interface_linux.go): net.Interfaces, InterfaceByIndex/ByName, the IPv4 addresses, and the
// raw messages' headers (sequence, port id, NLM_F_MULTI, NLMSG_DONE). Only lo and IPv4 are printed: the
// emulated host has no other interface and no IPv6 (the native host has both).
package main

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"unsafe"
)

func loopback() *net.Interface {
	ift, err := net.Interfaces()
	if err != nil {
		fmt.Println("interfaces:", err)
		os.Exit(1)
	}
	for _, ifi := range ift {
		if ifi.Flags&net.FlagLoopback != 0 {
			return &ifi
		}
	}
	return nil
}

func ipv4(addrs []net.Addr) []string {
	var out []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsLoopback() {
			out = append(out, n.String())
		}
	}
	return out
}

func rawDump(proto int) {
	tab, err := syscall.NetlinkRIB(proto, syscall.AF_UNSPEC)
	if err != nil {
		fmt.Println("rib:", err)
		return
	}
	msgs, err := syscall.ParseNetlinkMessage(tab)
	if err != nil {
		fmt.Println("parse:", err)
		return
	}
	last := msgs[len(msgs)-1]
	multi := true
	for _, m := range msgs {
		multi = multi && m.Header.Flags&syscall.NLM_F_MULTI != 0
	}
	fmt.Printf("dump %d: last type %d (done %v) all multi %v\n", proto, last.Header.Type,
		last.Header.Type == syscall.NLMSG_DONE, multi)
	for _, m := range msgs {
		switch m.Header.Type {
		case syscall.RTM_NEWLINK:
			ifim := (*syscall.IfInfomsg)(unsafe.Pointer(&m.Data[0]))
			if ifim.Flags&syscall.IFF_LOOPBACK == 0 {
				continue
			}
			attrs, _ := syscall.ParseNetlinkRouteAttr(&m)
			var name string
			var mtu uint32
			for _, a := range attrs {
				switch a.Attr.Type {
				case syscall.IFLA_IFNAME:
					name = string(a.Value[:len(a.Value)-1])
				case syscall.IFLA_MTU:
					mtu = *(*uint32)(unsafe.Pointer(&a.Value[0]))
				}
			}
			fmt.Printf("  link %s index %d type %d flags %#x mtu %d\n", name, ifim.Index, ifim.Type,
				ifim.Flags&(syscall.IFF_UP|syscall.IFF_LOOPBACK|syscall.IFF_RUNNING|0x10000), mtu)
		case syscall.RTM_NEWADDR:
			ifam := (*syscall.IfAddrmsg)(unsafe.Pointer(&m.Data[0]))
			if ifam.Family != syscall.AF_INET || ifam.Index != 1 {
				continue
			}
			attrs, _ := syscall.ParseNetlinkRouteAttr(&m)
			fmt.Printf("  addr family %d prefix %d scope %d index %d:", ifam.Family, ifam.Prefixlen, ifam.Scope, ifam.Index)
			for _, a := range attrs {
				switch a.Attr.Type {
				case syscall.IFA_ADDRESS, syscall.IFA_LOCAL:
					fmt.Printf(" %d=%v", a.Attr.Type, net.IP(a.Value))
				case syscall.IFA_LABEL:
					fmt.Printf(" label=%s", a.Value[:len(a.Value)-1])
				}
			}
			fmt.Println()
		}
	}
}

// raw speaks to NETLINK_ROUTE directly: the port id autobind gives, an unknown request's error, EADDRINUSE.
func raw() {
	s, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		fmt.Println("socket:", err)
		return
	}
	defer syscall.Close(s)
	before, _ := syscall.Getsockname(s)
	fmt.Println("port id before bind:", before.(*syscall.SockaddrNetlink).Pid)
	if err := syscall.Bind(s, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		fmt.Println("bind:", err)
		return
	}
	sa, _ := syscall.Getsockname(s)
	pid := sa.(*syscall.SockaddrNetlink).Pid
	fmt.Println("port id is the pid:", int(pid) == os.Getpid())
	fmt.Println("bind again:", syscall.Bind(s, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}))

	s2, _ := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW, syscall.NETLINK_ROUTE)
	defer syscall.Close(s2)
	fmt.Println("bind a taken port id:", syscall.Bind(s2, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK, Pid: pid}))
	syscall.Bind(s2, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK})
	sa2, _ := syscall.Getsockname(s2)
	fmt.Println("second socket's port id is negative:", int32(sa2.(*syscall.SockaddrNetlink).Pid) < 0)

	// an unknown message type, with NLM_F_ACK: an NLMSG_ERROR carrying -EOPNOTSUPP and the request's header
	req := make([]byte, 20)
	*(*uint32)(unsafe.Pointer(&req[0])) = 20
	*(*uint16)(unsafe.Pointer(&req[4])) = 0xffff
	*(*uint16)(unsafe.Pointer(&req[6])) = syscall.NLM_F_REQUEST | syscall.NLM_F_ACK
	*(*uint32)(unsafe.Pointer(&req[8])) = 7
	if err := syscall.Sendto(s, req, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		fmt.Println("sendto:", err)
		return
	}
	buf := make([]byte, 4096)
	n, from, err := syscall.Recvfrom(s, buf, 0)
	if err != nil {
		fmt.Println("recvfrom:", err)
		return
	}
	msgs, _ := syscall.ParseNetlinkMessage(buf[:n])
	m := msgs[0]
	fmt.Printf("reply from port %d: type %d seq %d to us %v error %d\n", from.(*syscall.SockaddrNetlink).Pid,
		m.Header.Type, m.Header.Seq, m.Header.Pid == pid, *(*int32)(unsafe.Pointer(&m.Data[0])))

	// a dump's datagrams: the addresses, then NLMSG_DONE alone in the last one
	dump := make([]byte, 20)
	*(*uint32)(unsafe.Pointer(&dump[0])) = 17
	*(*uint16)(unsafe.Pointer(&dump[4])) = syscall.RTM_GETADDR
	*(*uint16)(unsafe.Pointer(&dump[6])) = syscall.NLM_F_REQUEST | syscall.NLM_F_DUMP
	*(*uint32)(unsafe.Pointer(&dump[8])) = 8
	dump[16] = syscall.AF_INET
	syscall.Sendto(s, dump, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK})
	for {
		n, _, err := syscall.Recvfrom(s, buf, 0)
		if err != nil {
			fmt.Println("recvfrom:", err)
			return
		}
		msgs, _ := syscall.ParseNetlinkMessage(buf[:n])
		kinds := map[uint16]int{}
		for _, m := range msgs {
			kinds[m.Header.Type]++
		}
		if kinds[syscall.NLMSG_DONE] > 0 {
			fmt.Println("datagram with DONE:", len(msgs), "message(s)")
			break
		}
		fmt.Println("datagram of addresses only:", kinds[syscall.RTM_NEWADDR] == len(msgs))
	}

	_, err = syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_STREAM, syscall.NETLINK_ROUTE)
	fmt.Println("stream netlink socket:", err)
}

func main() {
	lo := loopback()
	if lo == nil {
		fmt.Println("no loopback interface")
		return
	}
	fmt.Printf("%s: flags=%v index=%d mtu=%d hwaddr=%q\n", lo.Name, lo.Flags, lo.Index, lo.MTU, lo.HardwareAddr.String())
	byIndex, err := net.InterfaceByIndex(lo.Index)
	fmt.Println("by index:", byIndex.Name, err)
	byName, err := net.InterfaceByName("lo")
	fmt.Println("by name:", byName.Index, err)
	_, err = net.InterfaceByName("nosuch0")
	fmt.Println("no such interface:", err)
	addrs, err := lo.Addrs()
	fmt.Println("lo addrs:", ipv4(addrs), err)
	all, err := net.InterfaceAddrs()
	fmt.Println("all addrs (loopback, IPv4):", ipv4(all), err)
	rawDump(syscall.RTM_GETLINK)
	rawDump(syscall.RTM_GETADDR)
	raw()
}
