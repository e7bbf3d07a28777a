package natsboard

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// netProxy is a loopback TCP proxy between NATS clients and a server, for
// tests of a network that misbehaves: it can cut every connection at once
// (and refuse new ones), stall them (connections stay open and no byte
// moves, a partition TCP does not notice), and be restored. A client
// given url() reaches the server only through it.
type netProxy struct {
	ln     net.Listener
	target string
	quit   chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	down  bool          // cut: new connections are closed at once
	gate  chan struct{} // closed while bytes flow; open (blocking) while stalled
	open  bool          // gate is closed
}

// newProxy listens on a loopback port and forwards to target (host:port)
// until the test ends.
func newProxy(t testing.TB, target string) *netProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &netProxy{ln: ln, target: target, quit: make(chan struct{}), conns: map[net.Conn]struct{}{},
		gate: make(chan struct{}), open: true}
	close(p.gate)
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// url is the NATS URL that reaches the server through the proxy.
func (p *netProxy) url() string { return "nats://" + p.ln.Addr().String() }

func (p *netProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.down || isClosed(p.quit) {
			p.mu.Unlock()
			c.Close()
			s.Close()
			continue
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(s, c) })
		p.wg.Go(func() { p.pipe(c, s) })
	}
}

// pipe copies src to dst, holding each chunk while the proxy is stalled,
// until either side closes.
func (p *netProxy) pipe(dst, src net.Conn) {
	defer p.forget(dst, src)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pass waits while the proxy is stalled; false when it is closed.
func (p *netProxy) pass() bool {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	select {
	case <-gate:
		return true
	case <-p.quit:
		return false
	}
}

func (p *netProxy) forget(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.conns, c)
	}
}

// cut closes every connection abruptly and refuses new ones until
// restore.
func (p *netProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not a goodbye
		}
		c.Close()
	}
}

// stall stops moving bytes on every connection, new ones included, until
// restore; connections stay open.
func (p *netProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open {
		p.gate, p.open = make(chan struct{}), false
	}
}

// restore ends a cut or a stall: held bytes move on, new connections are
// taken.
func (p *netProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	if !p.open {
		close(p.gate)
		p.open = true
	}
}

func (p *netProxy) close() {
	p.mu.Lock()
	if isClosed(p.quit) {
		p.mu.Unlock()
		return
	}
	close(p.quit)
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// TestNetProxy: the proxy's three faults do what the partition tests
// rely on. A stalled connection stays up while nothing reaches the
// server; a cut one is noticed and comes back only once restored; the
// server does not hand its clients a way around the proxy.
func TestNetProxy(t *testing.T) {
	t.Parallel()
	srv := runServer(t)
	p := newProxy(t, srv.Addr().String())
	disconnected, reconnected := make(chan struct{}, 8), make(chan struct{}, 8)
	nc, err := nats.Connect(p.url(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { disconnected <- struct{}{} }),
		nats.ReconnectHandler(func(*nats.Conn) { reconnected <- struct{}{} }))
	must(t, err)
	defer nc.Close()
	if got := nc.Servers(); len(got) != 1 {
		t.Fatalf("the client knows %v: a reconnect could bypass the proxy", got)
	}
	p.stall()
	if err := nc.FlushTimeout(300 * time.Millisecond); err == nil {
		t.Error("a flush went through a stalled proxy")
	}
	if !nc.IsConnected() {
		t.Error("a stall closed the connection")
	}
	p.restore()
	must(t, nc.FlushTimeout(5*time.Second))

	p.cut()
	select {
	case <-disconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("a cut went unnoticed")
	}
	if err := nc.FlushTimeout(300 * time.Millisecond); err == nil {
		t.Error("a flush went through a cut proxy")
	}
	p.restore()
	select {
	case <-reconnected:
	case <-time.After(10 * time.Second):
		t.Fatal("no reconnect after restore")
	}
	must(t, nc.FlushTimeout(5*time.Second))
}
