package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/internal/httpguard"
)

// guardedHTTP is how fsd ui and fsd mcp serve --http serve: on loopback
// unless the address names a host, answering only requests addressed to
// the server by one of its names (see httpguard).
type guardedHTTP struct {
	flag    string        // the address flag, for errors: "--addr", "--http"
	addr    string        // HOST:PORT or :PORT
	allow   []string      // --allow-host names
	grace   time.Duration // how long a stop waits for requests in flight
	exposed string        // what the network gets when the address is not loopback
	started func(net.Addr)
	// token, when set, is required of every request as a bearer token;
	// needToken refuses to listen beyond loopback without one.
	token     []byte
	needToken bool
	// maxBody caps request bodies (413); 0: no cap.
	maxBody int64
	// stopping is called when a stop begins, before requests in flight
	// are waited for (fsd serve drains its turns there).
	stopping func(context.Context)
}

// addAllowHostFlag declares --allow-host on a command that serves HTTP.
func addAllowHostFlag(cmd *cobra.Command, allow *[]string) {
	cmd.Flags().StringArrayVar(allow, "allow-host", nil, "also answer requests whose Host or Origin is `NAME`, a host or host:port (a proxy's name, say); by default only localhost, 127.0.0.1 and [::1] at the port, and the listening address")
}

// serve serves h behind the guard (S7) until ctx ends or a stop signal.
// Listening on every interface is allowed, but said on stderr: the
// records become readable from the network.
func (g guardedHTTP) serve(ctx context.Context, h http.Handler, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	for _, n := range g.allow {
		if err := httpguard.ValidName(n); err != nil {
			return fail(exitUsage, "--allow-host: %v", err)
		}
	}
	if g.needToken && len(g.token) == 0 && !httpguard.Loopback(g.addr) {
		return fail(exitUsage, "%s %s is beyond loopback: give a bearer token with --token-file FILE (clients send Authorization: Bearer TOKEN)", g.flag, g.addr)
	}
	ln, err := httpguard.Listen(g.addr, g.allow)
	if errors.Is(err, httpguard.ErrMalformed) {
		return fail(exitUsage, "%s: %v", g.flag, err)
	}
	if err != nil {
		return fail(exitProblems, "%s: %v", g.flag, err)
	}
	if ln.Exposed() && g.needToken && len(g.token) == 0 {
		ln.Close() // a name that resolved beyond loopback
		return fail(exitUsage, "%s %s is beyond loopback: give a bearer token with --token-file FILE (clients send Authorization: Bearer TOKEN)", g.flag, g.addr)
	}
	if g.maxBody > 0 {
		h = httpguard.Limit(g.maxBody, h)
	}
	h = httpguard.Bearer(g.token, h)
	if ln.Exposed() {
		fmt.Fprintf(stderr, "fsd: warning: listening on %s, beyond loopback: %s, for anyone who reaches it by an allowed name (--allow-host)\n", ln.Addr(), g.exposed)
	}
	hs := &http.Server{Handler: ln.Guard(h), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := withSignals(ctx)
	defer stop()
	if g.started != nil {
		g.started(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fail(exitProblems, "%s: %v", g.flag, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), g.grace)
	defer cancel()
	if g.stopping != nil {
		g.stopping(sctx)
	}
	_ = hs.Shutdown(sctx)
	return nil
}
