// Package netguard decides which addresses outbound fetches on a user's
// behalf (URL imports and webhook deliveries) may reach: public unicast only,
// plus networks an operator allows, checked on the address actually dialled.
package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// ErrForbidden marks a dial refused because of its address.
var ErrForbidden = errors.New("address not allowed")

// special lists the IANA special-purpose and non-public ranges (RFC 6890 and
// its updates). Beyond the obvious private ones it holds shared address space
// (where some clouds put their metadata service), benchmarking, the IETF
// block, the reserved class E, and every IPv6 form that embeds or translates
// to an IPv4 address (NAT64, 6to4, Teredo, IPv4-compatible), since those can
// lead back to a private IPv4 host.
var special = func() []netip.Prefix {
	nets := []string{
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared address space (carrier-grade NAT, cloud metadata)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local (cloud metadata)
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay anycast
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and 255.255.255.255 broadcast
		"::/96",           // unspecified, loopback and IPv4-compatible ::a.b.c.d
		"::ffff:0:0/96",   // IPv4-mapped, should one arrive still mapped
		"::ffff:0:0:0/96", // IPv4-translated
		"64:ff9b::/96",    // NAT64 well-known prefix
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard-only
		"2001::/23",       // IETF protocol assignments, Teredo included
		"2001:db8::/32",   // documentation
		"2002::/16",       // 6to4
		"3fff::/20",       // documentation
		"5f00::/16",       // segment routing SIDs
		"fc00::/7",        // unique local
		"fe80::/10",       // link-local
		"fec0::/10",       // site-local (deprecated)
		"ff00::/8",        // multicast
	}
	out := make([]netip.Prefix, len(nets))
	for i, n := range nets {
		out[i] = netip.MustParsePrefix(n)
	}
	return out
}()

// Public reports whether ip is an ordinary public unicast address. An
// IPv4-mapped IPv6 address is judged as the IPv4 address it carries.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() || !ip.IsGlobalUnicast() {
		return false
	}
	for _, p := range special {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// Guard holds the networks an operator lets fetches reach despite their
// being non-public (for example a local test server).
type Guard struct {
	Allow []netip.Prefix
}

// Check returns nil if ip may be dialled, or an error wrapping ErrForbidden.
func (g Guard) Check(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	for _, p := range g.Allow {
		if p.Contains(ip) {
			return nil
		}
	}
	if !Public(ip) {
		return fmt.Errorf("%w: %s is not a public address", ErrForbidden, ip)
	}
	return nil
}

// Control is a net.Dialer Control function applying Check to the address
// being dialled, after name resolution, for every connection.
func (g Guard) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an IP address", ErrForbidden, address)
	}
	return g.Check(ap.Addr())
}
