package anthropic

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/internal/fakeserver"
)

// TestTruncatedStream: a stream that stops before message_stop is not an
// answer. It is retried, and the consumer hears a reset before the retry's
// text so it never shows "Two Two calls.".
func TestTruncatedStream(t *testing.T) {
	stop := strings.Index(okStream, "event: message_stop")
	afterText := strings.Index(okStream, "event: content_block_stop")
	both := []string{"Two ", "calls.", "<reset>", "Two ", "calls."}
	tests := []struct {
		name   string
		first  fakeserver.Reply
		deltas []string
	}{
		{"chunked body that ends cleanly", fakeserver.Reply{Body: okStream[:stop], Chunked: true, Header: sse}, both},
		{"connection closed mid-event", fakeserver.Reply{Body: okStream[:afterText+30], Abort: true, Header: sse}, both},
		{"no message at all", fakeserver.Reply{Body: "", Header: sse}, []string{"Two ", "calls."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeserver.New(tt.first, fakeserver.Reply{Body: okStream, Chunked: true, Header: sse})
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
		r := fakeserver.Reply{Body: okStream[:stop], Chunked: true, Header: sse}
		srv := fakeserver.New(r, r)
		defer srv.Close()
		m := newModel(t, srv, nil)
		m.cfg.Retry.MaxRetries = 1
		req := conversation()
		req.OnText = func(string) {}
		_, err := m.Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "anthropic: the answer stream ended early, without message_stop (gave up after 2 attempts)") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestAnswerCap: an answer over model.MaxResponseBytes fails, once, with
// the limit named.
func TestAnswerCap(t *testing.T) {
	big := strings.Repeat("x", model.MaxResponseBytes/2)
	whole := `{"id":"m","content":[{"type":"text","text":"` + big + `"},{"type":"text","text":"` + big + `y"}],"usage":{}}`
	delta := func(s string) string {
		return "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + s + `"}}` + "\n\n"
	}
	stream := "event: message_start\n" + `data: {"type":"message_start","message":{"id":"m","content":[],"usage":{}}}` + "\n\n" +
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n" +
		delta(big) + delta(big) + delta("y") +
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"
	for _, streaming := range []bool{false, true} {
		reply := fakeserver.Reply{Body: whole}
		if streaming {
			reply = fakeserver.Reply{Body: stream, Header: sse}
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
