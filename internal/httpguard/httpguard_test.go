package httpguard

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func listen(t *testing.T, addr string, allow ...string) *Listener {
	t.Helper()
	ln, err := Listen(addr, allow)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// ":PORT" names no host: the listener is on loopback, not every interface.
func TestListenEmptyHostIsLoopback(t *testing.T) {
	ln := listen(t, ":0")
	a := ln.Addr().(*net.TCPAddr)
	if !a.IP.Equal(net.IPv4(127, 0, 0, 1)) || ln.Exposed() {
		t.Errorf("listening on %s (exposed %v), want 127.0.0.1 only", a, ln.Exposed())
	}
	if all := listen(t, "0.0.0.0:0"); !all.Exposed() {
		t.Errorf("0.0.0.0 is not reported as exposed")
	}
}

func TestCheck(t *testing.T) {
	ln := listen(t, "127.0.0.1:0", "fsd.example.com", "Proxy:8080")
	port := ln.Addr().(*net.TCPAddr).Port
	self := func(h string) string { return net.JoinHostPort(h, strconv.Itoa(port)) }
	for _, tc := range []struct {
		name, host, origin, refused string
	}{
		{"loopback ip", self("127.0.0.1"), "", ""},
		{"localhost", self("localhost"), "", ""},
		{"ipv6 loopback", self("::1"), "", ""},
		{"case", self("LocalHost"), "", ""},
		{"same origin", self("localhost"), "http://" + self("localhost"), ""},
		{"allowed name", "fsd.example.com", "https://fsd.example.com", ""},
		{"allowed name with port", "proxy:8080", "", ""},
		{"rebound name", "evil.example", "", `Host "evil.example"`},
		{"rebound name at our port", self("evil.example"), "", "is not a name of this server"},
		{"loopback at another port", "localhost:1", "", "is not a name"},
		{"allowed name at another port", "fsd.example.com:9", "", "is not a name"},
		{"cross origin", self("localhost"), "http://evil.example", `Origin "http://evil.example" is another site`},
		{"another local port", self("localhost"), "http://localhost:1", "another site"},
		{"null origin", self("localhost"), "null", "is not a page"},
		{"no host", "", "", "no Host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/runs", nil)
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			err := ln.Check(r)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Errorf("err = %v, want one containing %q", err, tc.refused)
			}
		})
	}
}

// Guard's refusal is a 403 with the reason on one line, and the handler
// behind it never runs.
func TestGuard(t *testing.T) {
	ln := listen(t, ":0")
	ran := false
	h := ln.Guard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "evil.example"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if body := w.Body.String(); w.Code != http.StatusForbidden || ran || strings.Count(body, "\n") != 1 || !strings.HasPrefix(body, "forbidden: ") {
		t.Errorf("got %d %q (handler ran: %v), want 403 and one line", w.Code, body, ran)
	}
}

func TestValidName(t *testing.T) {
	for _, n := range []string{"", "http://fsd.example.com", "fsd.example.com/ui", "user@host"} {
		if ValidName(n) == nil {
			t.Errorf("%q accepted", n)
		}
	}
	if _, err := Listen(":0", []string{"https://x"}); !errors.Is(err, ErrMalformed) {
		t.Errorf("Listen took a URL for a name")
	}
}

func TestBearer(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := Bearer([]byte("s3cret"), ok)
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Bearer s3cre", http.StatusUnauthorized},
		{"Basic s3cret", http.StatusUnauthorized},
		{"Bearer s3cret", http.StatusNoContent},
		// The scheme is case-insensitive (RFC 7235 §2.1).
		{"bearer s3cret", http.StatusNoContent},
		{"BEARER s3cret", http.StatusNoContent},
		{"bearer S3CRET", http.StatusUnauthorized},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, w.Code, tc.want)
		}
	}
}

func TestLimit(t *testing.T) {
	read := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h := Limit(8, read)
	for _, tc := range []struct {
		name    string
		body    string
		chunked bool
		want    int
	}{
		{"under", "12345678", false, http.StatusNoContent},
		{"over by its length", "123456789", false, http.StatusRequestEntityTooLarge},
		{"over while read", "123456789", true, http.StatusRequestEntityTooLarge},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tc.body))
		if tc.chunked {
			r.ContentLength = -1
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{":8480": true, "127.0.0.1:1": true, "localhost:1": true, "[::1]:1": true, "0.0.0.0:1": false, "10.0.0.2:1": false, "fsd.example.com:1": false} {
		if got := Loopback(addr); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
