package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsdrun/fsd/internal/syncbuf"
)

// announced is a writer that hands the first http:// URL written to it to
// a channel: a server's "listening at" line.
type announced struct {
	syncbuf.Buffer
	once sync.Once
	url  chan string
}

var announcedURL = regexp.MustCompile(`http://[^\s/]+/\S*`)

func newAnnounced() *announced { return &announced{url: make(chan string, 1)} }

func (a *announced) Write(p []byte) (int, error) {
	n, err := a.Buffer.Write(p)
	if m := announcedURL.FindString(a.String()); m != "" {
		a.once.Do(func() { a.url <- m })
	}
	return n, err
}

// serving runs serve in the background, waits for the URL it announces on
// w, and stops it when the test ends.
func serving(t *testing.T, w *announced, serve func(ctx context.Context) error) *url.URL {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case s := <-w.url:
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	case err := <-done:
		t.Fatalf("serve ended before listening: %v (%q)", err, w.String())
	case <-time.After(time.Minute):
		t.Fatalf("no address announced: %q", w.String())
	}
	return nil
}

// status sends r and returns its status code.
func status(t *testing.T, r *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// fsd ui --addr :PORT listens on loopback only, and answers only requests
// that name it: a DNS name rebound to 127.0.0.1 (Host: evil.example) or a
// page of another site (Origin) gets 403, not the list of runs.
func TestUIGuardsHostAndOrigin(t *testing.T) {
	out := newAnnounced()
	var stderr syncbuf.Buffer
	u := serving(t, out, func(ctx context.Context) error {
		return serveUI(ctx, t.TempDir(), guardedHTTP{flag: "--addr", addr: ":0"}, out, &stderr)
	})
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		t.Fatalf("--addr :0 listens on %s, want loopback", u.Host)
	}
	if stderr.String() != "" {
		t.Errorf("stderr on loopback: %q", stderr.String())
	}
	api := u.JoinPath("api/runs").String()
	for _, tc := range []struct {
		name, host, origin string
		want               int
	}{
		{"own address", "", "", http.StatusOK},
		{"localhost", "localhost:" + u.Port(), "http://localhost:" + u.Port(), http.StatusOK},
		{"rebound name", "evil.example", "", http.StatusForbidden},
		{"rebound name at the port", "evil.example:" + u.Port(), "", http.StatusForbidden},
		{"another site's page", "", "http://evil.example", http.StatusForbidden},
	} {
		r, _ := http.NewRequest("GET", api, nil)
		if tc.host != "" {
			r.Host = tc.host
		}
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got := status(t, r); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, got, tc.want)
		}
	}
}

// An address naming every interface is served, with a warning; a name
// added with --allow-host is answered.
func TestUIExposedWarnsAndAllowHost(t *testing.T) {
	out := newAnnounced()
	var stderr syncbuf.Buffer
	u := serving(t, out, func(ctx context.Context) error {
		return serveUI(ctx, t.TempDir(), guardedHTTP{flag: "--addr", addr: "0.0.0.0:0", allow: []string{"runs.example.com"}}, out, &stderr)
	})
	if !regexp.MustCompile(`^fsd: warning: listening on \S+:` + u.Port() + `, beyond loopback: the run records`).MatchString(stderr.String()) {
		t.Errorf("stderr = %q, want a warning", stderr.String())
	}
	r, _ := http.NewRequest("GET", "http://127.0.0.1:"+u.Port()+"/api/runs", nil)
	r.Host = "runs.example.com"
	if got := status(t, r); got != http.StatusOK {
		t.Errorf("--allow-host name: status %d", got)
	}
	if err := serveUI(context.Background(), t.TempDir(), guardedHTTP{flag: "--addr", addr: ":0", allow: []string{"https://runs.example.com"}}, out, &stderr); !isExit(err, exitUsage) {
		t.Errorf("a URL as --allow-host: %v, want a usage error", err)
	}
}

func isExit(err error, code int) bool {
	var e *exitError
	return errors.As(err, &e) && e.code == code
}

// MCP over HTTP refuses a request from another site's page (Origin), as
// the MCP transport requires, and a rebound DNS name (Host).
func TestMCPServeHTTPGuardsOriginAndHost(t *testing.T) {
	stderr := newAnnounced()
	u := serving(t, stderr, func(ctx context.Context) error {
		return serveMCP(ctx, "../../examples/hello/hello.workflow.yaml", mcpFlags{runFlags: runFlags{runsDir: t.TempDir()}, http: ":0"}, nil, nil, stderr)
	})
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		t.Fatalf("--http :0 listens on %s, want loopback", u.Host)
	}
	initialize := func(host, origin string) *http.Request {
		r, _ := http.NewRequest("POST", u.String(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			r.Host = host
		}
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		return r
	}
	if got := status(t, initialize("", "")); got != http.StatusOK {
		t.Fatalf("initialize: status %d, want 200", got)
	}
	if got := status(t, initialize("", "http://"+u.Host)); got != http.StatusOK {
		t.Errorf("initialize from the server's own origin: status %d, want 200", got)
	}
	if got := status(t, initialize("", "http://evil.example")); got != http.StatusForbidden {
		t.Errorf("Origin: http://evil.example: status %d, want 403", got)
	}
	if got := status(t, initialize("evil.example", "")); got != http.StatusForbidden {
		t.Errorf("Host: evil.example: status %d, want 403", got)
	}
}
