package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrMalformed is wrapped by Listen's errors about its arguments (an
// address or a name that cannot be one), as opposed to failing to listen.
var ErrMalformed = errors.New("malformed")

// Listener is a TCP listener with the names its server answers to.
type Listener struct {
	net.Listener
	names map[string]bool
}

// Listen listens on addr, "HOST:PORT" or ":PORT". S7: a ":PORT" listens on
// 127.0.0.1 only: listening on every interface is said explicitly
// ("0.0.0.0:PORT"). The server answers to localhost, 127.0.0.1 and [::1] at
// the bound port, to addr's host and the listener's own address, and to
// each name in allow: a host or host:port, as clients put it in Host (a
// proxy's name, for one).
func Listen(addr string, allow []string) (*Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w address %q: want HOST:PORT or :PORT (%v)", ErrMalformed, addr, err)
	}
	names := map[string]bool{}
	for _, n := range allow {
		if err := ValidName(n); err != nil {
			return nil, err
		}
		names[strings.ToLower(n)] = true
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, err
	}
	bound := ln.Addr().(*net.TCPAddr)
	port = fmt.Sprint(bound.Port)
	for _, h := range []string{"127.0.0.1", "localhost", "::1", host, bound.IP.String()} {
		hp := strings.ToLower(net.JoinHostPort(h, port))
		names[hp] = true
		if port == "80" { // browsers leave the default port out of Host and Origin
			names[strings.TrimSuffix(hp, ":80")] = true
		}
	}
	return &Listener{Listener: ln, names: names}, nil
}

// ValidName says why name cannot be an allowed Host: it must be a host or
// host:port, without scheme or path.
func ValidName(name string) error {
	if name == "" || strings.ContainsAny(name, "/?#@ ") {
		return fmt.Errorf("%w name %q: want a host or host:port as clients send it in Host (e.g. fsd.example.com or proxy:8080)", ErrMalformed, name)
	}
	return nil
}

// Exposed reports whether the listener takes connections from other
// machines: its address is not loopback.
func (l *Listener) Exposed() bool {
	a, ok := l.Addr().(*net.TCPAddr)
	return !ok || !a.IP.IsLoopback()
}

// Check returns why r must be refused, or nil (S7): its Host is not one
// of the server's names, or it carries an Origin (a browser page's) whose
// host is not one either.
func (l *Listener) Check(r *http.Request) error {
	if r.Host == "" {
		return errors.New("no Host header")
	}
	if !l.names[strings.ToLower(r.Host)] {
		return fmt.Errorf("Host %q is not a name of this server (add it with --allow-host)", r.Host)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("Origin %q is not a page of this server", origin)
	}
	if !l.names[strings.ToLower(u.Host)] {
		return fmt.Errorf("Origin %q is another site (add its host with --allow-host)", origin)
	}
	return nil
}

// Guard answers 403 Forbidden, with Check's reason on one line, to the
// requests Check refuses, and passes the others to h.
func (l *Listener) Guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := l.Check(r); err != nil {
			http.Error(w, "forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Bearer answers 401 Unauthorized to requests whose Authorization is not
// "Bearer TOKEN", comparing in constant time, and passes the others to h.
// An empty token lets every request through.
//
// Y6: beyond loopback fsd serve requires one.
func Bearer(token []byte, h http.Handler) http.Handler {
	if len(token) == 0 {
		return h
	}
	want := sha256.Sum256(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 7235): clients send "bearer".
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		ok = ok && strings.EqualFold(scheme, "Bearer")
		sum := sha256.Sum256([]byte(got))
		// Hashes first: the compare takes as long whatever the length.
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="fsd"`)
			http.Error(w, "unauthorized: send Authorization: Bearer TOKEN (the server's --token-file)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Limit answers 413 Request Entity Too Large to a request whose body is
// over max bytes: at once when its Content-Length says so, else when its
// handler reads past max (http.MaxBytesReader; the handler sees a
// *http.MaxBytesError).
func Limit(max int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			http.Error(w, fmt.Sprintf("request body too large: over %d bytes", max), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		h.ServeHTTP(w, r)
	})
}

// Loopback reports whether Listen(addr) listens on loopback only: the
// address names no host, localhost or a loopback IP. Servers that need
// a token beyond loopback decide it before listening.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true // Listen refuses it
	}
	if host == "" || strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
