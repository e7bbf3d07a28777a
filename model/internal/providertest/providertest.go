package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
	"github.com/fsdrun/fsd/model/retry"
)

// SSE is the header of a streamed reply.
var SSE = map[string]string{"Content-Type": "text/event-stream"}

// Waits collects the backoffs a policy asked for instead of sleeping.
type Waits []time.Duration

// Sleep records d and returns at once.
func (w *Waits) Sleep(ctx context.Context, d time.Duration) error {
	*w = append(*w, d)
	return ctx.Err()
}

// Policy is a test's retry policy: waits recorded in w (nil: dropped)
// instead of slept, no jitter, 5 s per attempt.
func Policy(w *Waits) retry.Policy {
	if w == nil {
		w = &Waits{}
	}
	return retry.Policy{Sleep: w.Sleep, Jitter: func(d time.Duration) time.Duration { return d }, Timeout: 5 * time.Second}
}

// Conversation is a request that exercises every mapping: the context
// block, user text, an assistant turn with text and two calls (ids
// prefixed by callID), both results, one an error, and two tools, one
// without parameters.
func Conversation(callID string) *model.Request {
	return &model.Request{
		Context: "You are the reporting assistant.",
		Messages: []model.Message{
			{Role: model.User, Text: "Prepare the report."},
			{Role: model.Assistant, Text: "Reading.", Calls: []model.ToolCall{
				{ID: callID + "1", Name: "read_skill", Args: json.RawMessage(`{"id":"weekly-report"}`)},
				{ID: callID + "2", Name: "fetch_sales", Args: json.RawMessage(`{"week":"2025-W01"}`)},
			}},
			{Role: model.Tool, CallID: callID + "1", Name: "read_skill", Text: `{"loaded":true}`},
			{Role: model.Tool, CallID: callID + "2", Name: "fetch_sales", Text: "exit status 1", IsError: true},
			{Role: model.User, Text: "Go on."},
		},
		Tools: []model.ToolDef{
			{Name: "read_skill", Description: "Load a skill.", Parameters: json.RawMessage(
				`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`)},
			{Name: "listTasks", Description: "List tasks."},
		},
	}
}

// Provider is what the shared tests need of one provider.
type Provider struct {
	// New builds the provider's model for the server at url (the
	// server's root: New adds any path prefix the API has).
	New func(url string, p retry.Policy) (model.Model, error)
	// Request is a conversation with tools. OKBody answers it whole and
	// OKStream streamed: the text "Two calls." in two deltas, "Two " and
	// "calls.", and two tool calls.
	Request  func() *model.Request
	OKBody   string
	OKStream string
	// AsStream maps a reply of a Failure to what a server sends when
	// asked to stream: OKBody becomes OKStream, error statuses stay.
	AsStream func(fakeserver.Reply) fakeserver.Reply
}

// Model builds p's model for srv under Policy(nil).
func (p Provider) Model(t *testing.T, srv *fakeserver.Server) model.Model {
	t.Helper()
	return p.ModelWith(t, srv, Policy(nil))
}

// ModelWith builds p's model for srv under pol.
func (p Provider) ModelWith(t *testing.T, srv *fakeserver.Server, pol retry.Policy) model.Model {
	t.Helper()
	m, err := p.New(srv.URL, pol)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Call answers req with one reply body and returns the response and
// the body of the request the server got.
func (p Provider) Call(t *testing.T, reply fakeserver.Reply, req *model.Request) (*model.Response, []byte) {
	t.Helper()
	srv := fakeserver.New(reply)
	defer srv.Close()
	resp, err := p.Model(t, srv).Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimPrefix(srv.URL, "http://"); resp.Server != want {
		t.Errorf("response's server %q, want the one asked, %q", resp.Server, want)
	}
	return resp, srv.Requests()[0].Body
}

// IgnoreServer leaves the response's server out of comparisons: the fake
// server's port changes from test to test (Call checks it).
var IgnoreServer = cmpopts.IgnoreFields(model.Response{}, "Server")

// Whole answers Request with OKBody, not streamed, and checks that the
// response is want.
func (p Provider) Whole(t *testing.T, want *model.Response) {
	t.Helper()
	got, _ := p.Call(t, fakeserver.Reply{Body: p.OKBody}, p.Request())
	if diff := cmp.Diff(want, got, IgnoreServer); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

// Streaming streams OKStream and checks that the deltas reached OnText
// in order and the response is want. It returns the request body.
func (p Provider) Streaming(t *testing.T, want *model.Response) map[string]any {
	t.Helper()
	var deltas []string
	req := p.Request()
	req.OnText = func(d string) { deltas = append(deltas, d) }
	got, sent := p.Call(t, fakeserver.Reply{Body: p.OKStream, Chunked: true, Header: SSE}, req)
	if diff := cmp.Diff(want, got, IgnoreServer); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Two ", "calls."}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	var body map[string]any
	if err := json.Unmarshal(sent, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// Failure is one way a call fails or recovers.
type Failure struct {
	Name    string
	Replies []fakeserver.Reply
	Retries int           // retry.Policy.MaxRetries
	Timeout time.Duration // 0: Policy's
	// WantCalls is how many requests the server gets, WantWaits the
	// backoffs between them.
	WantCalls int
	WantWaits Waits
	// WantErr is in the error; "" means the call succeeds with OKBody's
	// two tool calls.
	WantErr string
}

// Failures runs each case twice, whole and streamed (the replies mapped
// by AsStream), and checks that no error carries key.
func (p Provider) Failures(t *testing.T, key string, cases []Failure) {
	for _, tt := range cases {
		for _, streaming := range []bool{false, true} {
			name := tt.Name
			if streaming {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				replies := tt.Replies
				if streaming {
					replies = make([]fakeserver.Reply, len(tt.Replies))
					for i, r := range tt.Replies {
						replies[i] = p.AsStream(r)
					}
				}
				p.fail(t, key, tt, replies, streaming)
			})
		}
	}
}

// StreamFailures runs each case streamed, its replies sent as they are,
// and checks that no error carries key.
func (p Provider) StreamFailures(t *testing.T, key string, cases []Failure) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) { p.fail(t, key, tt, tt.Replies, true) })
	}
}

// fail runs one Failure against replies.
func (p Provider) fail(t *testing.T, key string, tt Failure, replies []fakeserver.Reply, streaming bool) {
	t.Helper()
	srv := fakeserver.New(replies...)
	defer srv.Close()
	w := &Waits{}
	pol := Policy(w)
	pol.MaxRetries = tt.Retries
	if tt.Timeout > 0 {
		pol.Timeout = tt.Timeout
	}
	req := p.Request()
	if streaming {
		req.OnText = func(string) {}
	}
	resp, err := p.ModelWith(t, srv, pol).Generate(context.Background(), req)
	if got := len(srv.Requests()); got != tt.WantCalls {
		t.Errorf("%d requests, want %d", got, tt.WantCalls)
	}
	if diff := cmp.Diff(tt.WantWaits, *w, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	switch {
	case tt.WantErr == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case tt.WantErr == "" && (resp == nil || len(resp.Calls) != 2):
		t.Fatalf("response %+v, want two calls", resp)
	case tt.WantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.WantErr)):
		t.Fatalf("err = %v, want it to contain %q", err, tt.WantErr)
	}
	if err != nil && strings.Contains(err.Error(), key) {
		t.Errorf("error leaks the API key: %v", err)
	}
}

// Unstreamed checks replies to a streaming request that are not an event
// stream (servers and proxies that ignore "stream"): OKBody, sent as plain
// JSON, is the answer want after one request, its text handed to OnText
// once; OKStream labelled text/plain is still read as events; an HTML page
// (echoing key) fails after one request, naming its type and quoting its
// start with the key masked. name is the provider's name in errors.
func (p Provider) Unstreamed(t *testing.T, name, key string, want *model.Response) {
	t.Run("whole answer", func(t *testing.T) {
		var deltas []string
		req := p.Request()
		req.OnText = func(d string) { deltas = append(deltas, d) }
		srv := fakeserver.New(fakeserver.Reply{Body: p.OKBody}, fakeserver.Reply{Body: p.OKBody})
		defer srv.Close()
		got, err := p.Model(t, srv).Generate(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
		if diff := cmp.Diff(want, got, IgnoreServer); diff != "" {
			t.Errorf("response (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{want.Text}, deltas); diff != "" {
			t.Errorf("deltas (-want +got):\n%s", diff)
		}
	})
	p.StreamFailures(t, key, []Failure{
		{Name: "a page", Replies: []fakeserver.Reply{{Body: "<html>\n<p>Sign in, " + key + "</p>", Header: map[string]string{"Content-Type": "text/html; charset=utf-8"}}},
			WantCalls: 1, WantErr: name + `: the server answered a streaming request with Content-Type text/html; charset=utf-8, not an event stream; ` +
				`the reply begins "<html> <p>Sign in, [REDACTED]</p>"`},
		{Name: "events under another label", Replies: []fakeserver.Reply{{Body: p.OKStream, Chunked: true, Header: map[string]string{"Content-Type": "text/plain"}}},
			WantCalls: 1},
	})
}

// Cut is a first reply that ends a stream before the provider said the
// answer was complete, and the deltas OnText and OnReset (as "<reset>")
// hear before the retry, answered by OKStream, succeeds.
type Cut struct {
	Name   string
	First  fakeserver.Reply
	Deltas []string
}

// TruncatedStream checks that each cut stream is retried, with a reset
// before the retry's text when the cut one sent some, so a consumer
// never shows "Two Two calls.". Then, with every attempt cut by
// cases[0].First, that the call fails with wantErr after two attempts.
func (p Provider) TruncatedStream(t *testing.T, cases []Cut, wantErr string) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			srv := fakeserver.New(tt.First, fakeserver.Reply{Body: p.OKStream, Chunked: true, Header: SSE})
			defer srv.Close()
			var got []string
			req := p.Request()
			req.OnText = func(d string) { got = append(got, d) }
			req.OnReset = func() { got = append(got, "<reset>") }
			resp, err := p.Model(t, srv).Generate(context.Background(), req)
			if err != nil {
				t.Fatalf("a cut stream should be retried: %v", err)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
			if resp.Text != "Two calls." || len(resp.Calls) != 2 {
				t.Errorf("response %+v", resp)
			}
			if diff := cmp.Diff(tt.Deltas, got); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("every attempt cut", func(t *testing.T) {
		srv := fakeserver.New(cases[0].First, cases[0].First)
		defer srv.Close()
		pol := Policy(nil)
		pol.MaxRetries = 1
		req := p.Request()
		req.OnText = func(string) {}
		_, err := p.ModelWith(t, srv, pol).Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), wantErr+" (gave up after 2 attempts)") {
			t.Fatalf("err = %v, want %q after 2 attempts", err, wantErr)
		}
	})
}

// AnswerCap checks that an answer over model.MaxResponseBytes, whole or
// streamed, fails once (it is not retried) with the limit named.
func (p Provider) AnswerCap(t *testing.T, whole, stream string) {
	for _, streaming := range []bool{false, true} {
		reply := fakeserver.Reply{Body: whole}
		if streaming {
			reply = fakeserver.Reply{Body: stream, Header: SSE}
		}
		srv := fakeserver.New(reply, reply)
		pol := Policy(nil)
		pol.Timeout = 2 * time.Minute // 16 MiB under -race on a busy machine
		req := p.Request()
		if streaming {
			req.OnText = func(string) {}
		}
		_, err := p.ModelWith(t, srv, pol).Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "larger than the 8 MiB limit") {
			t.Errorf("streaming=%v: err = %v", streaming, err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("streaming=%v: %d requests, want 1", streaming, n)
		}
		srv.Close()
	}
}

// CancelStopsInFlight checks that cancelling the context ends a call
// the server holds open, with context.Canceled.
func (p Provider) CancelStopsInFlight(t *testing.T) {
	srv := fakeserver.New(fakeserver.Reply{Stall: true})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	m := p.Model(t, srv)
	go func() {
		_, err := m.Generate(ctx, p.Request())
		done <- err
	}()
	for len(srv.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
