package netguard_test

import (
	"errors"
	"net/netip"
	"testing"

	"lightbox/netguard"
)

// The addresses an attacker would aim an import at: every one must be refused
// by the predicate the dialer calls. No connection is ever opened.
func TestRefusesNonPublicAddresses(t *testing.T) {
	g := netguard.Guard{}
	for _, a := range []string{
		"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"100.64.0.1", "100.100.100.200", "100.127.255.254", // shared address space, a cloud's metadata
		"198.18.0.1", "198.19.255.255", // benchmarking
		"192.0.0.1", "192.0.0.170", // IETF protocol assignments
		"240.0.0.1", "255.255.255.255", "0.0.0.0", "0.1.2.3",
		"224.0.0.1", "192.0.2.1", "198.51.100.7", "203.0.113.9",
		"::", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "fec0::1",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", // NAT64 of loopback, of metadata
		"64:ff9b:1::a00:1",
		"2002:7f00:1::1", "2002:a9fe:a9fe::1", // 6to4 of loopback, of metadata
		"2001::1", "2001:db8::1", "100::1",
		"::127.0.0.1", "::169.254.169.254", "::10.0.0.1", // IPv4-compatible
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:100.100.100.200", // IPv4-mapped
		"::ffff:0:7f00:1", // IPv4-translated
	} {
		ip := netip.MustParseAddr(a)
		if netguard.Public(ip) {
			t.Errorf("%s counted as public", a)
		}
		if err := g.Check(ip); !errors.Is(err, netguard.ErrForbidden) {
			t.Errorf("%s: Check = %v, want ErrForbidden", a, err)
		}
		if err := g.Control("tcp", netip.AddrPortFrom(ip, 443).String(), nil); !errors.Is(err, netguard.ErrForbidden) {
			t.Errorf("%s: Control = %v, want ErrForbidden", a, err)
		}
	}
}

func TestAllowsPublicAddresses(t *testing.T) {
	g := netguard.Guard{}
	for _, a := range []string{
		"1.1.1.1", "8.8.8.8", "93.184.216.34", "100.63.255.255", "100.128.0.1", "198.20.0.1",
		"2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8",
	} {
		ip := netip.MustParseAddr(a)
		if !netguard.Public(ip) {
			t.Errorf("%s counted as not public", a)
		}
		if err := g.Control("tcp", netip.AddrPortFrom(ip, 443).String(), nil); err != nil {
			t.Errorf("%s: Control = %v, want nil", a, err)
		}
	}
}

func TestAllowListOpensNamedNetworksOnly(t *testing.T) {
	g := netguard.Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	for a, want := range map[string]bool{
		"127.0.0.1": true, "::ffff:127.0.0.1": true, "127.0.0.2": false, "10.0.0.1": false,
	} {
		err := g.Control("tcp", netip.AddrPortFrom(netip.MustParseAddr(a), 80).String(), nil)
		if (err == nil) != want {
			t.Errorf("%s: Control = %v, want allowed %v", a, err, want)
		}
	}
	if err := g.Control("tcp", "not-an-address:80", nil); !errors.Is(err, netguard.ErrForbidden) {
		t.Errorf("unparseable address: %v", err)
	}
}
