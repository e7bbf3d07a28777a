package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestAllowlistMatch(t *testing.T) {
	a, err := ParseAllowlist([]string{
		"api.example.com",
		"*.cdn.example.net",
		"Git.Example.ORG.:8443",
		"203.0.113.7",
		"[2001:db8::1]:8080",
		"*.corp.example:22",
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host string
		port int
		want match
	}{
		{"api.example.com", 443, byName},
		{"api.example.com", 80, byName},
		{"API.example.com.", 443, byName},
		{"api.example.com", 8443, denied}, // a bare host is the web ports only
		{"api.example.com", 22, denied},
		{"example.com", 443, denied},
		{"x.api.example.com", 443, denied}, // a name is not its subdomains
		{"a.cdn.example.net", 443, byWildcard},
		{"a.b.cdn.example.net", 80, byWildcard},
		{"cdn.example.net", 443, denied}, // a wildcard is not its domain
		{"evilcdn.example.net", 443, denied},
		{"a.cdn.example.net.evil.com", 443, denied},
		{"git.example.org", 8443, byName},
		{"git.example.org", 443, denied},
		{"203.0.113.7", 443, byName},
		{"::ffff:203.0.113.7", 80, byName},
		{"203.0.113.7", 22, denied},
		{"203.0.113.8", 443, denied},
		{"2001:db8::1", 8080, byName},
		{"2001:db8::1", 443, denied},
		{"db.corp.example", 22, byWildcard},
		{"db.corp.example", 443, denied},
		{"127.0.0.1", 443, denied}, // an address is reached only by naming it
	}
	for _, tt := range tests {
		if got := a.match(tt.host, tt.port); got != tt.want {
			t.Errorf("match(%q, %d) = %d, want %d", tt.host, tt.port, got, tt.want)
		}
	}
}

func TestAllowlistNameNeverAllowsAddress(t *testing.T) {
	a, err := ParseAllowlist([]string{"localhost:8080"})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.match("127.0.0.1", 8080); got != denied {
		t.Errorf("127.0.0.1:8080 under localhost:8080 = %d, want denied", got)
	}
	if got := a.match("localhost", 8080); got != byName {
		t.Errorf("localhost:8080 = %d, want byName", got)
	}
}

func TestParseAllowlistErrors(t *testing.T) {
	tests := []struct{ entry, want string }{
		{"", "empty"},
		{"https://api.example.com/", "not a URL"},
		{"api.example.com/v1", "not a URL"},
		{"user@host.example", "not a URL"},
		{"*", "network: on"},
		{"*.com", "top-level domain"},
		{"api.*.example.com", "at the start only"},
		{"host.example:0", "1 to 65535"},
		{"host.example:99999", "1 to 65535"},
		{"host.example:http", "1 to 65535"},
		{"2001:db8::1:8080x", "host:port"},
		{"bücher.example", "ASCII"},
		{"bad host.example", "not allowed in a host name"},
		{"a..example", "not a host name"},
	}
	for _, tt := range tests {
		err := CheckEntry(tt.entry)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckEntry(%q) = %v, want an error with %q", tt.entry, err, tt.want)
		}
	}
	for _, ok := range []string{"example.com", "*.example.com", "localhost", "localhost:3000", "10.0.0.1", "[::1]", "[::1]:8080", "::1", "my_host.internal:5432"} {
		if err := CheckEntry(ok); err != nil {
			t.Errorf("CheckEntry(%q) = %v, want nil", ok, err)
		}
	}
	if _, err := ParseAllowlist([]string{"ok.example", "https://x", "*"}); err == nil || strings.Count(err.Error(), "network host") != 2 {
		t.Errorf("ParseAllowlist names each bad entry: %v", err)
	}
}

func TestInternalAddresses(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "127.1.2.3", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "255.255.255.255", "224.0.0.1", "::1", "::", "fe80::1", "fd00::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a00:1"} {
		if !isInternal(netip.MustParseAddr(s)) {
			t.Errorf("isInternal(%s) = false", s)
		}
	}
	for _, s := range []string{"203.0.113.7", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2001:db8::1", "2606:4700::1111"} {
		if isInternal(netip.MustParseAddr(s)) {
			t.Errorf("isInternal(%s) = true", s)
		}
	}
}
