package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is what a Proxy allows and how much of fsd it may use.
type Config struct {
	// Allow is the hosts the proxy connects to; every other is denied.
	Allow Allowlist
	// Dir is the folder in which the proxy makes its own private folder
	// (0700) for its socket. The socket's path must fit a unix socket
	// address (108 bytes), so a short folder is best.
	Dir string
	// OnDeny, when set, is told of every denied connection, from the
	// proxy's goroutines (it may be called concurrently).
	OnDeny func(Denial)
	// MaxConns bounds the tunnels and forwarded requests in flight at
	// once (0: DefaultMaxConns); one more is answered 503. The proxy
	// accepts at most four times as many connections at once; more wait.
	MaxConns int
	// IdleTimeout ends a tunnel or an upstream connection over which no
	// byte has passed either way for that long (0: DefaultIdleTimeout).
	IdleTimeout time.Duration
	// Lookup resolves a host name to its addresses (nil: the system's
	// resolver). Tests give a fixed table.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

// Defaults of Config.
const (
	DefaultMaxConns    = 64
	DefaultIdleTimeout = 5 * time.Minute
	// headerTimeout bounds reading a request's header: a proxy client
	// sends it at once.
	headerTimeout = 10 * time.Second
	// dialTimeout bounds connecting to an allowed host.
	dialTimeout = 30 * time.Second
	// socketName is the proxy's socket in its private folder.
	socketName = "proxy.sock"
	// maxSocketPath is the size of a unix socket address's path on
	// Linux, its closing NUL included.
	maxSocketPath = 108
)

// Denial is a connection the proxy refused: what the program asked for
// and why. Its Error is the text the program receives with the 403.
type Denial struct {
	Host   string // as the program named it, without brackets
	Port   int
	Reason string // why, in a few words
	Entry  string // the `network:` entry that would allow it
}

func (d Denial) Error() string {
	return fmt.Sprintf(denialStart+"%s is not allowed: %s; to allow it, add %s to the network: list under sandbox: in the workflow or the skill (and the tool, wherever one sets a list)",
		net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), d.Reason, d.Entry)
}

// Proxy is a running allowlisting HTTP forward proxy on a unix socket.
type Proxy struct {
	cfg   Config
	dir   string
	srv   *http.Server
	fwd   *httputil.ReverseProxy
	tr    *http.Transport
	slots chan struct{}
	ctx   context.Context // ends with Close
	stop  context.CancelFunc

	mu      sync.Mutex
	closed  bool
	tunnels map[net.Conn]struct{} // hijacked connections, closed by Close
	wg      sync.WaitGroup        // serve and the tunnels
}

// Listen starts a proxy for cfg on a new socket (see Path). Close stops
// it and removes its folder.
func Listen(cfg Config) (*Proxy, error) {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Lookup == nil {
		cfg.Lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	dir, err := os.MkdirTemp(cfg.Dir, "egress-")
	if err != nil {
		return nil, fmt.Errorf("network proxy: %w", err)
	}
	sock := filepath.Join(dir, socketName)
	if len(sock) >= maxSocketPath {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("network proxy: its socket %s is longer than a unix socket's %d bytes; give a shorter folder (TMPDIR)", sock, maxSocketPath-1)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("network proxy: %w", err)
	}
	p := &Proxy{cfg: cfg, dir: dir, slots: make(chan struct{}, cfg.MaxConns), tunnels: map[net.Conn]struct{}{}}
	p.ctx, p.stop = context.WithCancel(context.Background())
	quiet := log.New(io.Discard, "", 0)
	p.tr = &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, port, err := splitHostPort(addr)
			if err != nil {
				return nil, err
			}
			c, err := p.dial(ctx, host, port)
			if err != nil {
				return nil, err
			}
			return idle(c, p.cfg.IdleTimeout, newActivity()), nil
		},
		// Forward what the program asked for, compressed or not.
		DisableCompression:    true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	p.fwd = &httputil.ReverseProxy{
		// E4: ReverseProxy removes the hop-by-hop headers
		// (Proxy-Authorization among them) both ways, and X-Forwarded-*;
		// the absolute URL is where the request goes.
		Rewrite:       func(*httputil.ProxyRequest) {},
		Transport:     p.tr,
		FlushInterval: -1,
		ErrorLog:      quiet,
		ErrorHandler:  p.failed,
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          quiet,
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.srv.Serve(limitListener(ln, 4*cfg.MaxConns))
	}()
	return p, nil
}

// Path is the proxy's unix socket.
func (p *Proxy) Path() string { return filepath.Join(p.dir, socketName) }

// Close stops the proxy, ends its tunnels and removes its folder.
//
// E3: nothing of the proxy outlives Close.
func (p *Proxy) Close() error {
	p.stop()
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	err := p.srv.Close()
	p.wg.Wait()
	p.tr.CloseIdleConnections()
	if rmErr := os.RemoveAll(p.dir); err == nil {
		err = rmErr
	}
	return err
}

// ServeHTTP tunnels a CONNECT and forwards a request for an absolute URL.
//
// E3: tunnels and forwarded requests in flight are bounded; one more is
// answered 503 at once rather than queued.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect && (r.URL.Host == "" || (r.URL.Scheme != "http" && r.URL.Scheme != "https")) {
		http.Error(w, "fsd sandbox: this is a proxy: ask for an absolute http:// or https:// URL, or CONNECT host:port", http.StatusBadRequest)
		return
	}
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("fsd sandbox: too many connections through the network proxy at once (at most %d)", p.cfg.MaxConns), http.StatusServiceUnavailable)
		return
	}
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	p.fwd.ServeHTTP(w, r)
}

// connect dials the host a CONNECT names and, once connected, answers 200
// and copies bytes both ways until either side is done.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port, err := splitHostPort(r.Host)
	if err != nil {
		http.Error(w, "fsd sandbox: CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	// Not r's context: the server cancels it when the program ends its
	// writing, which a program may do right after its CONNECT and first
	// bytes. The dial is bounded by its own timeout and by Close.
	up, err := p.dial(p.ctx, host, port)
	if err != nil {
		p.failed(w, r, err)
		return
	}
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		http.Error(w, "fsd sandbox: cannot tunnel over this connection", http.StatusInternalServerError)
		return
	}
	if !p.track(client, up) {
		client.Close()
		up.Close()
		return
	}
	defer p.untrack(client, up)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		up.Close()
		return
	}
	var in net.Conn = client
	if n := brw.Reader.Buffered(); n > 0 {
		// The program sent its first bytes (a TLS hello) with the CONNECT.
		head, _ := brw.Reader.Peek(n)
		in = &prefixConn{Conn: client, head: head}
	}
	activity := newActivity()
	pipe(idle(in, p.cfg.IdleTimeout, activity), idle(up, p.cfg.IdleTimeout, activity))
}

// track registers a tunnel's connections for Close, or reports that the
// proxy is closing.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.tunnels, c)
	}
}

// failed answers a request the proxy could not serve: 403 for a denial
// (told to OnDeny), 502 for a host it could not reach.
func (p *Proxy) failed(w http.ResponseWriter, r *http.Request, err error) {
	if d, ok := errors.AsType[Denial](err); ok {
		if p.cfg.OnDeny != nil {
			p.cfg.OnDeny(d)
		}
		http.Error(w, d.Error(), http.StatusForbidden)
		return
	}
	http.Error(w, "fsd sandbox: "+err.Error(), http.StatusBadGateway)
}

// dial connects to host:port if the allowlist allows it, to an address
// it resolved and checked itself, so a name cannot resolve to one
// address for the check and another for the connection.
//
// E1: only a host and port an entry allows is dialled; any other is a
// Denial, answered 403 and reported. E2: a host allowed only by a
// wildcard is never dialled at an internal address.
func (p *Proxy) dial(ctx context.Context, host string, port int) (net.Conn, error) {
	deny := func(reason, entry string) (net.Conn, error) {
		return nil, Denial{Host: host, Port: port, Reason: reason, Entry: entry}
	}
	how := p.cfg.Allow.match(host, port)
	if how == denied {
		return deny("it is not in the sandbox's network list", entryFor(host, port))
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		ctx, cancel := context.WithTimeout(ctx, dialTimeout)
		addrs, err = p.cfg.Lookup(ctx, host)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("cannot resolve %s: %w", host, err)
		}
	}
	var usable []netip.Addr
	for _, a := range addrs {
		if neverDialed(a) || how == byWildcard && isInternal(a) {
			continue
		}
		usable = append(usable, a)
	}
	if len(usable) == 0 {
		if len(addrs) == 0 {
			return nil, fmt.Errorf("cannot resolve %s: no addresses", host)
		}
		return deny(fmt.Sprintf("it resolves to %s, on this machine or its network, which a wildcard entry does not reach", addrs[0]), entryFor(host, port))
	}
	d := net.Dialer{Timeout: dialTimeout}
	var firstErr error
	for _, a := range usable {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("cannot reach %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), firstErr)
}

// entryFor is the `network:` entry that allows host:port: the bare host
// for the web ports.
func entryFor(host string, port int) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == 80 || port == 443 {
		return host
	}
	return host + ":" + strconv.Itoa(port)
}

// splitHostPort splits an authority that must carry a port.
func splitHostPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 || host == "" {
		return "", 0, fmt.Errorf("bad address %q", addr)
	}
	return host, port, nil
}
