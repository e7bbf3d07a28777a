package openai

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

var sseHeader = map[string]string{"Content-Type": "text/event-stream"}

// TestTruncatedStream: a stream that stops before a finish reason or
// [DONE] is not an answer. It is retried, and the consumer hears a reset
// before the retry's text so it never shows "Two Two calls.".
func TestTruncatedStream(t *testing.T) {
	cut := strings.Index(okStream, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason"`)
	firstEvent := strings.Index(okStream[1:], "data: ") + 1
	both := []string{"Two ", "calls.", "<reset>", "Two ", "calls."}
	tests := []struct {
		name   string
		first  fakeserver.Reply
		deltas []string
	}{
		{"chunked body that ends cleanly", fakeserver.Reply{Body: okStream[:cut], Chunked: true, Header: sseHeader}, both},
		{"connection closed mid-event", fakeserver.Reply{Body: okStream[:cut+40], Abort: true, Header: sseHeader}, both},
		{"one event, then a clean end", fakeserver.Reply{Body: okStream[:firstEvent], Header: sseHeader},
			[]string{"Two ", "<reset>", "Two ", "calls."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeserver.New(tt.first, fakeserver.Reply{Body: okStream, Chunked: true, Header: sseHeader})
			defer srv.Close()
			var got []string
			req := conversation()
			req.OnText = func(d string) { got = append(got, d) }
			req.OnReset = func() { got = append(got, "<reset>") }
			resp, err := newModel(t, srv, nil).Generate(context.Background(), req)
			if err != nil {
				t.Fatalf("a cut stream should be retried: %v", err)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
			if resp.Text != "Two calls." || len(resp.Calls) != 2 {
				t.Errorf("response %+v", resp)
			}
			if diff := cmp.Diff(tt.deltas, got); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("every attempt cut", func(t *testing.T) {
		r := fakeserver.Reply{Body: okStream[:cut], Chunked: true, Header: sseHeader}
		srv := fakeserver.New(r, r)
		defer srv.Close()
		m := newModel(t, srv, nil)
		m.cfg.Retry.MaxRetries = 1
		req := conversation()
		req.OnText = func(string) {}
		_, err := m.Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "openai: the answer stream ended early, without a finish reason or [DONE] (gave up after 2 attempts)") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestAnswerCap: an answer over model.MaxResponseBytes fails, once, with
// the limit named; it is neither retried nor held whole.
func TestAnswerCap(t *testing.T) {
	big := strings.Repeat("x", model.MaxResponseBytes/2)
	whole := `{"id":"c","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"` + big + big + `y"}}]}`
	chunk := `data: {"id":"c","choices":[{"index":0,"delta":{"content":"` + big + `"}}]}` + "\n\n"
	stream := chunk + chunk + `data: {"id":"c","choices":[{"index":0,"delta":{"content":"y"}}]}` + "\n\n" + "data: [DONE]\n\n"
	for _, streaming := range []bool{false, true} {
		reply := fakeserver.Reply{Body: whole}
		if streaming {
			reply = fakeserver.Reply{Body: stream, Header: sseHeader}
		}
		srv := fakeserver.New(reply, reply)
		m := newModel(t, srv, nil)
		m.cfg.Retry.Timeout = 2 * time.Minute // 16 MiB under -race on a busy machine
		req := conversation()
		if streaming {
			req.OnText = func(string) {}
		}
		_, err := m.Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "larger than the 8 MiB limit") {
			t.Errorf("streaming=%v: err = %v", streaming, err)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("streaming=%v: %d requests, want 1", streaming, n)
		}
		srv.Close()
	}
}
