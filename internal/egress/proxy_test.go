package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// testTimeout bounds every wait of these tests: a failure, never a
// duration a test asserts.
const testTimeout = 30 * time.Second

// startProxy runs a proxy allowing entries, with denials collected.
func startProxy(t *testing.T, cfg Config, entries ...string) (*Proxy, *denials) {
	t.Helper()
	a, err := ParseAllowlist(entries)
	if err != nil {
		t.Fatal(err)
	}
	d := &denials{}
	cfg.Allow, cfg.Dir, cfg.OnDeny = a, t.TempDir(), d.add
	p, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, d
}

type denials struct {
	mu   sync.Mutex
	list []Denial
}

func (d *denials) add(x Denial) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.list = append(d.list, x)
}

func (d *denials) all() []Denial {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Denial(nil), d.list...)
}

// client is an HTTP client whose proxy is p, as a sandboxed program's.
func client(p *Proxy, tlsConf *tls.Config) *http.Client {
	return &http.Client{
		Timeout: testTimeout,
		Transport: &http.Transport{
			Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "proxy"}),
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", p.Path())
			},
			TLSClientConfig: tlsConf,
		},
	}
}

// hostPort is a test server's 127.0.0.1:PORT.
func hostPort(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestProxyConnectAllowed(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello over tls")
	}))
	defer srv.Close()
	p, d := startProxy(t, Config{}, hostPort(t, srv.URL))
	c := client(p, srv.Client().Transport.(*http.Transport).TLSClientConfig)
	if code, body := get(t, c, srv.URL+"/x"); code != 200 || body != "hello over tls" {
		t.Fatalf("got %d %q, want 200 and the server's body", code, body)
	}
	if got := d.all(); len(got) != 0 {
		t.Errorf("denials %v for an allowed host", got)
	}
}

func TestProxyForwardsHTTPWithoutHopHeaders(t *testing.T) {
	seen := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.Header().Set("Connection", "X-Secret-Hop")
		w.Header().Set("X-Secret-Hop", "1")
		fmt.Fprint(w, "plain "+r.URL.Path)
	}))
	defer srv.Close()
	p, _ := startProxy(t, Config{}, hostPort(t, srv.URL))
	conn, err := net.Dial("unix", p.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(testTimeout))
	fmt.Fprintf(conn, "GET %s/path HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nTe: deflate\r\nX-End-To-End: kept\r\n\r\n", srv.URL, hostPort(t, srv.URL))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != 200 || string(body) != "plain /path" {
		t.Fatalf("got %d %q, want 200 and the server's body", resp.StatusCode, body)
	}
	h := <-seen
	for _, k := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Hop", "Keep-Alive", "Te", "X-Forwarded-For"} {
		if v := h.Get(k); v != "" {
			t.Errorf("upstream got %s: %q, want it stripped", k, v)
		}
	}
	if h.Get("X-End-To-End") != "kept" {
		t.Errorf("upstream lost an end-to-end header: %v", h)
	}
	if v := resp.Header.Get("X-Secret-Hop"); v != "" {
		t.Errorf("program got the response's hop-by-hop X-Secret-Hop: %q", v)
	}
}

func TestProxyDeniesOtherHosts(t *testing.T) {
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer allowed.Close()
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the denied server got %s %s", r.Method, r.URL)
	}))
	other.StartTLS()
	defer other.Close()
	p, d := startProxy(t, Config{}, hostPort(t, allowed.URL))
	c := client(p, other.Client().Transport.(*http.Transport).TLSClientConfig)

	_, err := c.Get(other.URL) // CONNECT
	if err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("CONNECT to a denied host: %v, want 403 Forbidden", err)
	}
	plain := strings.Replace(other.URL, "https://", "http://", 1)
	code, body := get(t, c, plain+"/secret")
	if code != http.StatusForbidden {
		t.Fatalf("GET a denied host: %d, want 403", code)
	}
	target := hostPort(t, other.URL)
	for _, want := range []string{target, "network:", "sandbox:", "workflow or the skill"} {
		if !strings.Contains(body, want) {
			t.Errorf("403 body %q does not name %q", body, want)
		}
	}
	got := d.all()
	if len(got) != 2 {
		t.Fatalf("denials %v, want one per attempt", got)
	}
	for _, x := range got {
		if net.JoinHostPort(x.Host, fmt.Sprint(x.Port)) != target || x.Entry != target {
			t.Errorf("denial %+v, want host %s and the entry allowing it", x, target)
		}
	}
}

// fixedLookup resolves from a table, as a DNS the test controls.
func fixedLookup(table map[string][]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, s := range table[host] {
			out = append(out, netip.MustParseAddr(s))
		}
		if out == nil {
			return nil, fmt.Errorf("no such host %s", host)
		}
		return out, nil
	}
}

func TestProxyInternalAddressGuard(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "internal") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(hostPort(t, srv.URL))
	lookup := fixedLookup(map[string][]string{
		"rebound.example.test": {"127.0.0.1"},
		"named.example.test":   {"127.0.0.1"},
		"zero.example.test":    {"0.0.0.0"},
	})
	p, d := startProxy(t, Config{Lookup: lookup}, "*.example.test:"+port, "named.example.test:"+port, "zero.example.test:"+port)
	c := client(p, nil)

	code, body := get(t, c, "http://rebound.example.test:"+port+"/")
	if code != http.StatusForbidden || !strings.Contains(body, "resolves to 127.0.0.1") || !strings.Contains(body, "wildcard") {
		t.Errorf("a wildcard host resolving to loopback: %d %q, want 403 naming the address", code, body)
	}
	if code, body := get(t, c, "http://named.example.test:"+port+"/"); code != 200 || body != "internal" {
		t.Errorf("a host named outright, resolving to loopback: %d %q, want it reached", code, body)
	}
	if code, _ := get(t, c, "http://zero.example.test:"+port+"/"); code != http.StatusForbidden {
		t.Errorf("a host resolving to 0.0.0.0: %d, want 403", code)
	}
	if n := len(d.all()); n != 2 {
		t.Errorf("%d denials, want 2", n)
	}
}

// echoServer answers each connection with what it reads, ending its
// writing at the reader's end.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()
	return ln.Addr().String()
}

// tunnel opens a CONNECT tunnel to target through p, sending early
// along with the request.
func tunnel(t *testing.T, p *Proxy, target, early string) (net.Conn, *bufio.Reader, int) {
	t.Helper()
	conn, err := net.Dial("unix", p.Path())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(testTimeout))
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n%s", target, target, early)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return conn, br, resp.StatusCode
}

func TestProxyTunnelCarriesEarlyBytesAndHalfClose(t *testing.T) {
	echo := echoServer(t)
	p, _ := startProxy(t, Config{}, echo)
	conn, br, code := tunnel(t, p, echo, "early ")
	if code != 200 {
		t.Fatalf("CONNECT: %d", code)
	}
	io.WriteString(conn, "late")
	conn.(*net.UnixConn).CloseWrite()
	got, err := io.ReadAll(br)
	if err != nil || string(got) != "early late" {
		t.Fatalf("echo through the tunnel: %q, %v; want %q and the end", got, err, "early late")
	}
}

func TestProxyBoundsTunnels(t *testing.T) {
	echo := echoServer(t)
	p, _ := startProxy(t, Config{MaxConns: 2}, echo)
	for range 2 {
		conn, br, code := tunnel(t, p, echo, "")
		if code != 200 {
			t.Fatalf("tunnel within the bound: %d", code)
		}
		// An echo proves the tunnel is up, holding its slot.
		io.WriteString(conn, "x")
		if b, err := br.ReadByte(); err != nil || b != 'x' {
			t.Fatalf("echo: %q %v", b, err)
		}
	}
	if _, _, code := tunnel(t, p, echo, ""); code != http.StatusServiceUnavailable {
		t.Fatalf("a third tunnel with MaxConns 2: %d, want 503", code)
	}
}

func TestProxyIdleTunnelEnds(t *testing.T) {
	echo := echoServer(t)
	p, _ := startProxy(t, Config{IdleTimeout: 50 * time.Millisecond}, echo)
	_, br, code := tunnel(t, p, echo, "")
	if code != 200 {
		t.Fatalf("CONNECT: %d", code)
	}
	// Nothing is sent: the proxy ends the tunnel (the read is bounded by
	// the connection's deadline, a failure if the proxy never does).
	if _, err := io.ReadAll(br); err != nil {
		t.Fatalf("idle tunnel: %v, want the proxy to end it", err)
	}
}

func TestProxyCloseEndsTunnelsAndRemovesSocket(t *testing.T) {
	echo := echoServer(t)
	p, _ := startProxy(t, Config{}, echo)
	fi, err := os.Stat(p.dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket folder: %v %v, want mode 0700", fi.Mode(), err)
	}
	_, br, code := tunnel(t, p, echo, "")
	if code != 200 {
		t.Fatalf("CONNECT: %d", code)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(br); err != nil {
		t.Fatalf("tunnel after Close: %v, want it ended", err)
	}
	if _, err := os.Stat(p.dir); !os.IsNotExist(err) {
		t.Errorf("socket folder after Close: %v, want it removed", err)
	}
}

func TestProxyRefusesOriginFormRequests(t *testing.T) {
	p, _ := startProxy(t, Config{}, "example.com")
	conn, err := net.Dial("unix", p.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(testTimeout))
	io.WriteString(conn, "GET /etc/passwd HTTP/1.1\r\nHost: example.com\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("origin-form request: %v %v, want 400", resp, err)
	}
}

func TestListenRefusesTooLongASocketPath(t *testing.T) {
	dir := t.TempDir() + "/" + strings.Repeat("d", 100)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Listen(Config{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "shorter folder") {
		t.Fatalf("Listen in a deep folder: %v, want an error naming the fix", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Listen left %d entries behind", len(ents))
	}
}
