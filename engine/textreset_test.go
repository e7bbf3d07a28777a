package engine

import (
	"strings"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
)

// TestTextResetEvent: a provider that retries a streamed call after sending
// text says so through OnReset, and the client hears text.reset before the
// retry's deltas (so it never shows the text twice).
func TestTextResetEvent(t *testing.T) {
	testpar.UnlessRace(t)
	stream := func(req *model.Request) *model.Response {
		if req.OnText == nil || req.OnReset == nil {
			t.Fatal("the host's request does not stream with a reset hook")
		}
		req.OnText("Hel")
		req.OnReset()
		req.OnText("Hello")
		return &model.Response{Text: "Hello"}
	}
	_, _, events, err := runWith(t, project(), Options{}, stream)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		switch e.Type {
		case event.Text, event.TextReset:
			s := e.Type + ":" + e.Text
			if e.Delta {
				s += "(delta)"
			}
			got = append(got, s)
		}
	}
	want := []string{"text:Hel(delta)", "text.reset:", "text:Hello(delta)", "text:Hello"}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
}

// TestTextDeltasMaskSplitSecret: a key a provider streams in two deltas
// (a lying server, a proxy echoing the request's headers) is masked in
// the text events as in the final answer: masked delta by delta, each
// half passed, and a client joining the deltas held the key.
func TestTextDeltasMaskSplitSecret(t *testing.T) {
	testpar.UnlessRace(t)
	const key = "sk-test-SECRET123"
	stream := func(req *model.Request) *model.Response {
		req.OnText("the key is sk-test-SEC")
		req.OnText("RET123, twice: sk-test-")
		req.OnText("SECRET123")
		return &model.Response{Text: "the key is " + key + ", twice: " + key}
	}
	_, _, events, err := runWith(t, project(), Options{Secrets: []string{key}}, stream)
	if err != nil {
		t.Fatal(err)
	}
	var deltas strings.Builder
	for _, e := range events {
		if e.Type == event.Text && e.Delta {
			deltas.WriteString(e.Text)
		}
	}
	if want := "the key is [REDACTED], twice: [REDACTED]"; deltas.String() != want {
		t.Errorf("the deltas join to %q, want %q", deltas.String(), want)
	}
}
