package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxBridged bounds the connections one Bridge carries at once; more
// wait in the listener's backlog until one ends.
const MaxBridged = 256

// Bridge accepts connections on ln and joins each to a fresh connection
// from dial, copying bytes both ways — a side's end of writing is passed
// on as a half-close — until both sides are done. It returns when ctx
// ends (nil), having closed ln and every connection it carries, or when
// ln fails. The sandbox's launcher runs it inside the program's network
// namespace: ln is 127.0.0.1:PORT there, dial reaches the Proxy's socket.
//
// E5: bytes cross both ways with half-close, at most MaxBridged
// connections at once, and nothing outlives ctx.
func Bridge(ctx context.Context, ln net.Listener, dial func(context.Context) (net.Conn, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu     sync.Mutex
		ended  bool
		open   = map[net.Conn]struct{}{}
		wg     sync.WaitGroup
		slots  = make(chan struct{}, MaxBridged)
		result error
	)
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		ended = true
		for c := range open {
			c.Close()
		}
	})
	defer stop()
	keep := func(cs ...net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			if ended {
				c.Close()
			} else {
				open[c] = struct{}{}
			}
		}
		return !ended
	}
	drop := func(cs ...net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			delete(open, c)
		}
	}
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				result = err
			}
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if !keep(c) {
				return
			}
			defer drop(c)
			up, err := dial(ctx)
			if err != nil {
				c.Close()
				return
			}
			if !keep(up) {
				c.Close()
				return
			}
			defer drop(up)
			pipe(c, up)
		})
	}
	cancel()
	wg.Wait()
	return result
}

// ProxyEnv is the environment that sends a program's HTTP, HTTPS and
// other proxied traffic to the bridge on 127.0.0.1:port, in the upper
// and lower case forms different tools read. NODE_USE_ENV_PROXY makes
// Node (24 and later) read them too.
func ProxyEnv(port int) []string {
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		env = append(env, k+"="+url)
	}
	return append(env, "NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1", "NODE_USE_ENV_PROXY=1")
}

// Environ (E6) is env with ProxyEnv(port) in place of every proxy variable
// env had: a name given twice is read differently by different programs
// (the first by C and Go, the last by Python), and a proxy of the
// program's own leads nowhere from the sandbox.
func Environ(env []string, port int) []string {
	proxy := ProxyEnv(port)
	out := make([]string, 0, len(env)+len(proxy))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(proxy, func(p string) bool { return strings.HasPrefix(p, k+"=") }) {
			out = append(out, kv)
		}
	}
	return append(out, proxy...)
}

// pipe copies a to b and b to a until both are done, then closes both.
func pipe(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		half(b, a)
	}()
	half(a, b)
	<-done
	a.Close()
	b.Close()
}

// half copies src to dst. At src's end it ends dst's writing, so the peer
// sees the end while the other direction goes on; on a failure it closes
// both, which ends the other direction too.
func half(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		src.Close()
		dst.Close()
		return
	}
	closeWrite(dst)
}

// closeWrite ends c's writing, or closes c when it cannot half-close.
func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}

// activity is when a byte last passed over a connection pair, either way.
type activity struct{ last atomic.Int64 }

func newActivity() *activity {
	a := &activity{}
	a.touch()
	return a
}

func (a *activity) touch()               { a.last.Store(time.Now().UnixNano()) }
func (a *activity) since() time.Duration { return time.Duration(time.Now().UnixNano() - a.last.Load()) }

// idleConn (E3) fails a read or a write once no byte has passed either way
// (per its activity, which a tunnel's two sides share) for its timeout:
// a long download with nothing sent is not idle.
type idleConn struct {
	net.Conn
	timeout time.Duration
	act     *activity
}

// idle wraps c to end after timeout without activity.
func idle(c net.Conn, timeout time.Duration, act *activity) net.Conn {
	return &idleConn{Conn: c, timeout: timeout, act: act}
}

func (c *idleConn) Read(b []byte) (int, error) {
	for {
		c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
		n, err := c.Conn.Read(b)
		if n > 0 {
			c.act.touch()
		}
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && c.act.since() < c.timeout {
			continue // the other direction is busy
		}
		return n, err
	}
}

func (c *idleConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.act.touch()
	}
	return n, err
}

func (c *idleConn) CloseWrite() error { return closeWrite(c.Conn) }

// prefixConn reads head before the connection: bytes a program sent
// along with its CONNECT, already read with the request.
type prefixConn struct {
	net.Conn
	head []byte
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(b, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

func (c *prefixConn) CloseWrite() error { return closeWrite(c.Conn) }

// limitListener accepts at most n connections at once; Accept waits for
// one to close.
func limitListener(ln net.Listener, n int) net.Listener {
	return &limited{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limited) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back when closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

func (c *limitedConn) CloseWrite() error { return closeWrite(c.Conn) }
