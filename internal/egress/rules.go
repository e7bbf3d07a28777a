package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Allowlist is the hosts a sandboxed program may reach, parsed from the
// entries of a `network:` setting. An entry is
//
//   - a host name, `api.example.com`: that host on ports 80 and 443;
//   - a wildcard, `*.example.com`: every host under example.com (not
//     example.com itself) on ports 80 and 443;
//   - an IP address, `203.0.113.7` or `[2001:db8::1]`: that address on
//     ports 80 and 443;
//   - any of these with a port, `api.example.com:8443`, `[::1]:8080`:
//     that port only.
//
// A bare host means the web ports, not every port: an allowlist entry is
// a promise about what a program can reach, and "any port" would open
// the host's SSH, database and admin ports too.
//
// Names are compared without case and without a trailing dot. A name
// written out (or an IP address) may resolve to any address, the user's
// own machine and network included: the author named it. A host reached
// only through a wildcard is refused when it resolves to a loopback,
// private, link-local (cloud metadata), shared or multicast address:
// a wildcard trusts a domain's DNS, and whoever runs that DNS must not be
// able to point the sandbox at the user's own machine or network.
type Allowlist struct {
	rules []rule
}

// rule is one parsed entry.
type rule struct {
	host     string     // lowercase name without trailing dot; for a wildcard, the domain after "*."
	wildcard bool       // host's subdomains, not host itself
	ip       netip.Addr // valid when the entry is an IP address
	port     int        // 0: ports 80 and 443
}

// webPorts are what an entry without a port allows.
var webPorts = [...]int{80, 443}

// ParseAllowlist parses the entries of a `network:` setting, all or
// nothing: the error names each entry that is not a host.
func ParseAllowlist(entries []string) (Allowlist, error) {
	var a Allowlist
	var errs []string
	for _, e := range entries {
		r, err := parseRule(e)
		if err != nil {
			errs = append(errs, fmt.Sprintf("network host %q: %v", e, err))
			continue
		}
		a.rules = append(a.rules, r)
	}
	if errs != nil {
		return Allowlist{}, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return a, nil
}

// CheckEntry says why entry is not a valid `network:` host (the reason
// alone, for a diagnostic that names the entry), or nil: the one check
// behind manifests and the proxy alike.
func CheckEntry(entry string) error {
	_, err := parseRule(entry)
	return err
}

func parseRule(entry string) (rule, error) {
	s := strings.ToLower(strings.TrimSpace(entry))
	bad := func(why string) (rule, error) {
		return rule{}, errors.New(why)
	}
	switch {
	case s == "":
		return bad("empty")
	case strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@"):
		return bad("a host name, optionally with :port, not a URL (write api.example.com, not https://api.example.com/)")
	case s == "*" || s == "*:*":
		return bad("every host is `network: on`, not a host entry")
	}
	bare := s
	if inner, ok := strings.CutPrefix(s, "["); ok && strings.HasSuffix(inner, "]") {
		bare = strings.TrimSuffix(inner, "]")
	}
	if ip, err := netip.ParseAddr(bare); err == nil {
		return rule{ip: ip.Unmap()}, nil
	}
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return bad("the port must be a number from 1 to 65535")
		}
		host, port = h, n
	} else if strings.HasPrefix(s, "[") || strings.Count(s, ":") > 0 {
		return bad("write host:port, or [ipv6]:port")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return rule{ip: ip.Unmap(), port: port}, nil
	}
	r := rule{host: strings.TrimSuffix(host, "."), port: port}
	if d, ok := strings.CutPrefix(r.host, "*."); ok {
		r.host, r.wildcard = d, true
		if !strings.Contains(d, ".") {
			return bad("a wildcard names a domain's hosts, not a whole top-level domain (write *.example.com)")
		}
	}
	if why := badName(r.host); why != "" {
		return bad(why)
	}
	return r, nil
}

// badName says why name is not a DNS host name, or "".
func badName(name string) string {
	if name == "" || len(name) > 253 {
		return "not a host name"
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return "not a host name"
		}
		for _, c := range label {
			switch {
			case c == '*':
				return "a wildcard is *. at the start only (write *.example.com)"
			case c > 0x7f:
				return "write an international name in its ASCII form (xn--…)"
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			default:
				return fmt.Sprintf("%q is not allowed in a host name", c)
			}
		}
	}
	return ""
}

// match is how a host and port are allowed: not at all, by an entry that
// names it (an IP address or the name itself), or only by a wildcard.
type match int

const (
	denied match = iota
	byWildcard
	byName
)

// match finds the strongest entry allowing host:port. host is a name or
// an IP address, without brackets.
//
// E1: a bare entry allows the web ports only, a wildcard its subdomains
// only, a name never an address.
func (a Allowlist) match(host string, port int) match {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	ip, ipErr := netip.ParseAddr(host)
	best := denied
	for _, r := range a.rules {
		if !r.allowsPort(port) {
			continue
		}
		switch {
		case r.ip.IsValid():
			if ipErr == nil && r.ip == ip.Unmap() {
				return byName
			}
		case ipErr == nil:
			// A name never allows an address written out: the program
			// must not reach by address what the entry names by name.
		case r.wildcard:
			if strings.HasSuffix(host, "."+r.host) {
				best = byWildcard
			}
		case r.host == host:
			return byName
		}
	}
	return best
}

func (r rule) allowsPort(port int) bool {
	if r.port != 0 {
		return r.port == port
	}
	return port == webPorts[0] || port == webPorts[1]
}

// internal are the addresses a host allowed only by a wildcard may not
// resolve to: the user's own machine and networks, not the internet.
var internal = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"; 0.0.0.0 is the local host
	netip.MustParsePrefix("10.0.0.0/8"),     // private
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT, shared
	netip.MustParsePrefix("127.0.0.0/8"),    // loopback
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, cloud metadata
	netip.MustParsePrefix("172.16.0.0/12"),  // private
	netip.MustParsePrefix("192.168.0.0/16"), // private
	netip.MustParsePrefix("224.0.0.0/3"),    // multicast, reserved, broadcast
	netip.MustParsePrefix("::/128"),         // unspecified
	netip.MustParsePrefix("::1/128"),        // loopback
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64: may carry any IPv4 address
	netip.MustParsePrefix("fc00::/7"),       // unique local
	netip.MustParsePrefix("fe80::/10"),      // link-local
	netip.MustParsePrefix("ff00::/8"),       // multicast
}

// isInternal reports whether ip is on the user's machine or networks
// rather than the internet (E2).
func isInternal(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range internal {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// neverDialed are addresses no entry makes reachable: 0.0.0.0 and :: mean
// the local host to connect(2), and multicast is not a peer.
func neverDialed(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsUnspecified() || ip.IsMulticast()
}
