package wire

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/retry"
)

const testKey = "sk-client-0123456789"

// lines is a Format whose answers are text/event-stream events carrying
// text, ended by an "end" event; an "error" event is a 503 that echoes
// the key.
var lines = Format{
	Whole: func(body io.Reader) (*model.Response, error) {
		b, err := io.ReadAll(body)
		return &model.Response{Text: string(b)}, err
	},
	Stream: func(events *SSE, onText func(string)) (*model.Response, error) {
		var text string
		for {
			ev, err := events.Next()
			if errors.Is(err, io.EOF) {
				return nil, Truncated("test", "end")
			}
			if err != nil {
				return nil, err
			}
			switch ev.Name {
			case "end":
				return &model.Response{Text: text}, nil
			case "error":
				return nil, &retry.StatusError{Provider: "test", Status: 503, Message: "overloaded for key " + testKey}
			}
			text += string(ev.Data)
			onText(string(ev.Data))
		}
	},
}

func newClient(t *testing.T, srv *fakeserver.Server, retries int) *Client {
	t.Helper()
	c, err := NewClient(Endpoint{
		Provider: "test", Model: "m", APIKey: testKey, BaseURL: srv.URL, Path: "/gen",
		KeyHeader: "Authorization", KeyPrefix: "Bearer ",
		Retry: retry.Policy{MaxRetries: retries, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }},
	}, lines)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var sse = map[string]string{"Content-Type": "text/event-stream"}

// A retried stream resets what the consumer was shown once, before the
// first attempt after the one that sent text, whatever that attempt
// does: the consumer never holds text of an attempt that failed, even
// when the call fails in the end.
func TestGenerateResetsBeforeRetry(t *testing.T) {
	for _, tt := range []struct {
		name    string
		replies []fakeserver.Reply
		want    []string
		wantErr string
	}{
		{"cut, error status, whole", []fakeserver.Reply{
			{Body: "data: a\n\n", Header: sse},
			{Status: 500, Body: "down"},
			{Body: "data: b\n\nevent: end\ndata:\n\n", Header: sse},
		}, []string{"a", "<reset>", "b"}, ""},
		{"cut, then every retry refused", []fakeserver.Reply{
			{Body: "data: a\n\n", Header: sse},
			{Status: 500, Body: "down"},
			{Status: 500, Body: "down"},
		}, []string{"a", "<reset>"}, "HTTP 500"},
		{"no text before the cut: no reset", []fakeserver.Reply{
			{Body: "", Header: sse},
			{Body: "data: b\n\nevent: end\ndata:\n\n", Header: sse},
		}, []string{"b"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeserver.New(tt.replies...)
			defer srv.Close()
			var got []string
			req := &model.Request{
				OnText:  func(d string) { got = append(got, d) },
				OnReset: func() { got = append(got, "<reset>") },
			}
			_, err := newClient(t, srv, 2).Generate(context.Background(), req, map[string]string{})
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
}

// The key is sent in its header, and the Accept header asks for a
// stream only when the call streams.
func TestGenerateHeaders(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: "whole"}, fakeserver.Reply{Body: "event: end\ndata:\n\n", Header: sse})
	defer srv.Close()
	c := newClient(t, srv, -1)
	if resp, err := c.Generate(context.Background(), &model.Request{}, nil); err != nil || resp.Text != "whole" {
		t.Fatalf("whole: %v, %v", resp, err)
	}
	if _, err := c.Generate(context.Background(), &model.Request{OnText: func(string) {}}, nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	for i, wantAccept := range []string{"", "text/event-stream"} {
		h := reqs[i].Header
		if h.Get("Authorization") != "Bearer "+testKey || h.Get("Accept") != wantAccept || reqs[i].Path != "/gen" {
			t.Errorf("request %d: %s with Authorization %q, Accept %q", i, reqs[i].Path, h.Get("Authorization"), h.Get("Accept"))
		}
	}
}

// An error the server sends inside a stream may echo the key: it is
// masked in the error's text and in the StatusError a caller reads.
func TestGenerateMasksStreamError(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Body: "event: error\ndata: x\n\n", Header: sse})
	defer srv.Close()
	_, err := newClient(t, srv, -1).Generate(context.Background(), &model.Request{OnText: func(string) {}}, nil)
	var se *retry.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusServiceUnavailable {
		t.Fatalf("err = %v, want a 503 StatusError", err)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(se.Message, testKey) || !strings.Contains(se.Message, "[REDACTED]") {
		t.Errorf("the key reached the error: %q, message %q", err, se.Message)
	}
}

func TestNewClientRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		e    Endpoint
		want string
	}{
		{"no model", Endpoint{Provider: "p", APIKey: testKey}, "p: no model name"},
		{"no key and no base URL", Endpoint{Provider: "p", Model: "m"}, "p: no API key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewClient(tt.e, lines); err == nil || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// The start of a reply quoted in an error never holds part of the key,
// even where the cut would split it.
func TestBeginsMasksAcrossTheCut(t *testing.T) {
	srv := fakeserver.New()
	defer srv.Close()
	c := newClient(t, srv, -1)
	for _, at := range []int{0, maxHead - len(testKey), maxHead - 5, maxHead - 1, maxHead, maxHead + 3} {
		body := []byte(strings.Repeat("x", at) + testKey + strings.Repeat("y", 400))
		got := c.begins(body)
		for n := 4; n <= len(testKey); n++ {
			if strings.Contains(got, testKey[:n]) {
				t.Errorf("key at %d: %q holds %d bytes of the key", at, got, n)
				break
			}
		}
	}
}

// A redirect to another origin (another host, or another port of the same
// host) is refused before the key goes there: Go's client drops only
// Authorization on a cross-host redirect, never a key header such as
// Anthropic's X-Api-Key or Gemini's X-Goog-Api-Key, and keeps even
// Authorization for another port. The call fails at once, naming where
// the server pointed.
func TestGenerateRefusesRedirectToAnotherOrigin(t *testing.T) {
	other := fakeserver.New(fakeserver.Reply{Body: "whole"})
	defer other.Close()
	for _, header := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key"} {
		for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
			for _, to := range []string{other.URL, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)} {
				srv := fakeserver.New(fakeserver.Reply{Status: code, Header: map[string]string{"Location": to + "/gen"}})
				c, err := NewClient(Endpoint{
					Provider: "test", Model: "m", APIKey: testKey, BaseURL: srv.URL, Path: "/gen", KeyHeader: header,
					Retry: retry.Policy{Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }},
				}, lines)
				if err != nil {
					t.Fatal(err)
				}
				before := len(other.Requests())
				_, err = c.Generate(context.Background(), &model.Request{}, nil)
				if n := len(other.Requests()); n != before {
					t.Errorf("%s %d to %s: the key followed the redirect (header %q)", header, code, to, other.Requests()[n-1].Header.Get(header))
				}
				if err == nil || !strings.Contains(err.Error(), "redirected to "+to+"/gen") || len(srv.Requests()) != 1 {
					t.Errorf("%s %d to %s: err = %v after %d requests; want one refused, naming the target", header, code, to, err, len(srv.Requests()))
				}
				srv.Close()
			}
		}
	}
	// Within the origin a redirect is followed, the key with it.
	srv := fakeserver.New(fakeserver.Reply{Status: http.StatusTemporaryRedirect, Header: map[string]string{"Location": "/moved"}}, fakeserver.Reply{Body: "moved"})
	defer srv.Close()
	resp, err := newClient(t, srv, -1).Generate(context.Background(), &model.Request{}, nil)
	if err != nil || resp.Text != "moved" || srv.Requests()[1].Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("same-origin redirect: %v, %v", resp, err)
	}
}

// A usage no call can have — a negative count, or one past any context
// window — is dropped, so the engine books its own estimate instead:
// booked as sent, a negative count gave budgets back (a lying server
// could spend past limits.max-input-tokens) and priced the call below
// zero, and a count near MaxInt64 overflowed the run's sum to negative.
func TestGenerateDropsImpossibleUsage(t *testing.T) {
	for _, tt := range []struct {
		u    model.Usage
		keep bool
	}{
		{model.Usage{InputTokens: 1200, OutputTokens: 30, CachedInputTokens: 1000, ReasoningTokens: 10}, true},
		{model.Usage{InputTokens: -1000000, OutputTokens: 5}, false},
		{model.Usage{InputTokens: 10, OutputTokens: -5}, false},
		{model.Usage{InputTokens: 10, CachedInputTokens: -3}, false},
		{model.Usage{InputTokens: 10, CacheWriteTokens: -3}, false},
		{model.Usage{OutputTokens: 10, ReasoningTokens: -3}, false},
		{model.Usage{InputTokens: math.MaxInt64, OutputTokens: 1}, false},
		{model.Usage{InputTokens: 1, OutputTokens: 1 << 50}, false},
	} {
		u := tt.u
		f := Format{Whole: func(io.Reader) (*model.Response, error) { return &model.Response{Text: "ok", Usage: u}, nil }}
		srv := fakeserver.New(fakeserver.Reply{Body: "{}"})
		c, err := NewClient(Endpoint{Provider: "test", Model: "m", BaseURL: srv.URL, Path: "/gen"}, f)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Generate(context.Background(), &model.Request{}, nil)
		srv.Close()
		if err != nil || resp.Text != "ok" {
			t.Fatalf("%+v: %v, %v", u, resp, err)
		}
		if want := (model.Usage{}); tt.keep {
			want = u
			if resp.Usage != want {
				t.Errorf("usage %+v became %+v, want it kept", u, resp.Usage)
			}
		} else if resp.Usage != want {
			t.Errorf("usage %+v kept, want it dropped", u)
		}
	}
}

// A connection that breaks, before the answer or in the middle of it,
// fails naming the provider and what happened, not with Go's bare
// "unexpected EOF"; it is still retried as a network error.
func TestGenerateNamesBrokenConnection(t *testing.T) {
	srv := fakeserver.New(
		fakeserver.Reply{Body: "data: Hel\n\n", Abort: true, Header: sse},
		fakeserver.Reply{Body: "data: Hel\n\n", Abort: true, Header: sse},
	)
	_, err := newClient(t, srv, 1).Generate(context.Background(), &model.Request{OnText: func(string) {}}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "test: the connection broke in the middle of the answer: unexpected EOF") || len(srv.Requests()) != 2 {
		t.Errorf("cut stream: %v after %d requests; want it named, and retried", err, len(srv.Requests()))
	}
	url := srv.URL
	srv.Close()
	c, err := NewClient(Endpoint{Provider: "test", Model: "m", BaseURL: url, Path: "/gen", Retry: retry.Policy{MaxRetries: -1}}, lines)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Generate(context.Background(), &model.Request{}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "test: ") || !retry.IsNetwork(err) {
		t.Errorf("no server: %v, want it named and a network error", err)
	}
}
