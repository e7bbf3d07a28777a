package egress

import (
	"context"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// startBridge runs Bridge from a loopback port to dial, returning the
// port's address and Bridge's result.
func startBridge(t *testing.T, ctx context.Context, dial func(context.Context) (net.Conn, error)) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Bridge(ctx, ln, dial) }()
	return ln.Addr().String(), done
}

func TestBridgeCopiesBothWaysWithHalfClose(t *testing.T) {
	echo := echoServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, done := startBridge(t, ctx, func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", echo)
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	io.WriteString(c, "to and fro")
	// The end of writing crosses the bridge, the echo server ends its
	// answer at it, and that end crosses back.
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "to and fro" {
		t.Fatalf("through the bridge: %q %v", got, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Bridge after its context ended: %v", err)
	}
}

func TestBridgeEndsWithContextClosingConnections(t *testing.T) {
	// The far side holds its connection open and says nothing.
	far, near := net.Pipe()
	defer far.Close()
	ctx, cancel := context.WithCancel(t.Context())
	dialed := make(chan struct{})
	addr, done := startBridge(t, ctx, func(context.Context) (net.Conn, error) {
		close(dialed)
		return near, nil
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	<-dialed
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Bridge: %v", err)
	}
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("a bridged connection after Bridge ended: %v, want it closed", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("the bridge's port still accepts after Bridge ended")
	}
}

func TestBridgeThroughProxy(t *testing.T) {
	echo := echoServer(t)
	p, _ := startProxy(t, Config{}, echo)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, _ := startBridge(t, ctx, func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", p.Path())
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(testTimeout))
	io.WriteString(c, "CONNECT "+echo+" HTTP/1.1\r\nHost: "+echo+"\r\n\r\nping")
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if want := "HTTP/1.1 200 Connection established\r\n\r\nping"; err != nil || string(got) != want {
		t.Fatalf("CONNECT through the bridge: %q %v, want %q", got, err, want)
	}
}

func TestProxyEnv(t *testing.T) {
	env := ProxyEnv(4321)
	for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:4321", "https_proxy=http://127.0.0.1:4321", "ALL_PROXY=http://127.0.0.1:4321", "NO_PROXY=localhost,127.0.0.1"} {
		if !slices.Contains(env, want) {
			t.Errorf("ProxyEnv lacks %s: %v", want, env)
		}
	}
}

func TestWatchDenialsSaysTheLine(t *testing.T) {
	echo := echoServer(t)
	p, _ := startProxy(t, Config{}, echo)
	said := make(chan string, 4)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, _ := startBridge(t, ctx, func(ctx context.Context) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "unix", p.Path())
		if err != nil {
			return nil, err
		}
		return WatchDenials(c, func(line string) { said <- line }), nil
	})
	connect := func(target, then string) string {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(testTimeout))
		io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"+then)
		c.(*net.TCPConn).CloseWrite()
		got, _ := io.ReadAll(c)
		return string(got)
	}
	// An allowed tunnel whose traffic looks like a denial is not one.
	fake := "HTTP/1.1 403 Forbidden\r\n\r\n" + denialStart + "fake\n"
	if got := connect(echo, fake); !strings.HasPrefix(got, "HTTP/1.1 200") || !strings.HasSuffix(got, fake) {
		t.Fatalf("allowed CONNECT: %q", got)
	}
	// Python asks in HTTP/1.0 and is answered in it.
	for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(testTimeout))
		io.WriteString(c, "CONNECT denied.example:443 "+proto+"\r\nHost: denied.example:443\r\n\r\n")
		c.(*net.TCPConn).CloseWrite()
		got, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(got), proto+" 403") {
			t.Fatalf("denied CONNECT: %q", got)
		}
		select {
		case line := <-said:
			want := Denial{Host: "denied.example", Port: 443, Reason: "it is not in the sandbox's network list", Entry: "denied.example"}.Error()
			if line != want {
				t.Errorf("said %q, want %q", line, want)
			}
		default:
			t.Fatalf("the denial in %s was not said", proto)
		}
	}
	if len(said) != 0 {
		t.Errorf("more said than the one denial: %q", <-said)
	}
}

func TestEnvironReplacesProxyVariables(t *testing.T) {
	env := Environ([]string{"PATH=/bin", "HTTPS_PROXY=http://corp:3128", "no_proxy=*", "HTTP_PROXY_EXTRA=kept"}, 4321)
	want := append([]string{"PATH=/bin", "HTTP_PROXY_EXTRA=kept"}, ProxyEnv(4321)...)
	if !slices.Equal(env, want) {
		t.Errorf("Environ = %q, want %q", env, want)
	}
}
