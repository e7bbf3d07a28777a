package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// rawServer answers Streamable HTTP with plain JSON, as a server written
// without the SDK would: initialize, one tool x, and calls of x answered
// with results[n] for the n-th call (the last one from then on).
func rawServer(t *testing.T, results ...string) *httptest.Server {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		_ = json.Unmarshal(b, &m)
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		res := `{}`
		switch m.Method {
		case "initialize":
			res = `{"protocolVersion":"` + m.Params.ProtocolVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
		case "tools/list":
			res = `{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			res = results[min(int(calls.Add(1))-1, len(results)-1)]
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+res+`}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A result the SDK cannot decode (a content type it does not know, a
// field of the wrong type) is a tool error saying what was wrong with it;
// the server, whose connection is fine, is not taken for stopped and
// closed, and answers the next call in the same session.
func TestUnreadableResultKeepsServer(t *testing.T) {
	srv := rawServer(t, `{"content":[{"type":"weird"}]}`, `{"content":[{"type":"text","text":"fine"}],"isError":"yes"}`,
		`{"content":[{"type":"text","text":"fine"}]}`)
	p := newPool(t, newEnv(t), Options{})
	s := httpSkill(srv.URL, nil)
	tools, notes := p.Acquire(context.Background(), s)
	if len(notes) > 0 {
		t.Fatal(notes)
	}
	x := byName(tools)["x"]
	for _, want := range []string{`unrecognized content type "weird"`, `isError of type bool`} {
		res := call(x, `{}`)
		if !res.IsError || !strings.Contains(res.Text, "answered with a result fsd cannot read") || !strings.Contains(res.Text, want) ||
			strings.Contains(res.Text, "stopped") {
			t.Errorf("result = %+v, want an unreadable answer naming %s", res, want)
		}
	}
	if res := call(x, `{}`); res.IsError || res.Text != "fine" {
		t.Errorf("next call = %+v", res)
	}
	if st := p.Stats(s, "t"); st.Starts != 1 || !st.Connected {
		t.Errorf("stats = %+v, want the first session still open", st)
	}
}

// An HTTP server's JSON answer over MaxAnswerBytes is not read whole (the
// SDK would, without a bound, where it bounds a stdio line and an SSE
// event): the call is a tool error saying so.
func TestHTTPAnswerBounded(t *testing.T) {
	huge := `{"content":[{"type":"text","text":"` + strings.Repeat("a", MaxAnswerBytes) + `"}]}`
	srv := rawServer(t, huge, `{"content":[{"type":"text","text":"fine"}]}`)
	p := newPool(t, newEnv(t), Options{})
	tools, notes := p.Acquire(context.Background(), httpSkill(srv.URL, nil))
	if len(notes) > 0 {
		t.Fatal(notes)
	}
	x := byName(tools)["x"]
	if res := call(x, `{}`); !res.IsError || !strings.Contains(res.Text, "the server's answer is over 16 MiB") {
		t.Errorf("result = %.300s (error %v)", res.Text, res.IsError)
	}
	if res := call(x, `{}`); res.IsError || res.Text != "fine" {
		t.Errorf("next call = %+v", res)
	}
}

// A server that never answers initialize, given up because the run is
// cancelled, is not said to have run out its start timeout.
func TestStartCancelledIsNotATimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	p := newPool(t, newEnv(t), Options{})
	ctx, cancel := context.WithTimeoutCause(context.Background(), 200*time.Millisecond, errors.New("the run was interrupted"))
	defer cancel()
	_, notes := p.Acquire(ctx, httpSkill(srv.URL, nil))
	if len(notes) != 1 || strings.Contains(notes[0], "did not answer within") || !strings.Contains(notes[0], "cancelled while starting: the run was interrupted") {
		t.Errorf("notes = %q", notes)
	}
}
