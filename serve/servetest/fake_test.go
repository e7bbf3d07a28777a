package servetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/serve"
	"github.com/fsdrun/fsd/serve/servetest"
)

func drain(t *testing.T, b serve.Backend, session string, after int64) []serve.Event {
	t.Helper()
	ch, err := b.Events(context.Background(), session, after)
	if err != nil {
		t.Fatal(err)
	}
	var out []serve.Event
	for e := range ch {
		out = append(out, e)
	}
	return out
}

func types(es []serve.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Type)
	}
	return out
}

func TestFakeEchoAndReplay(t *testing.T) {
	f := &servetest.Fake{}
	ti, err := f.Send(context.Background(), "s", "hi")
	if err != nil || ti.Turn != 1 {
		t.Fatalf("Send = %+v, %v", ti, err)
	}
	es := drain(t, f, "s", 0) // live: closes when the turn ends
	if got := types(es); len(got) != 3 || got[0] != event.RunStarted || got[1] != event.Text || got[2] != event.RunFinished {
		t.Fatalf("events = %v", got)
	}
	if es[1].Text != "echo: hi" || es[2].ID != 3 {
		t.Fatalf("events = %+v", es)
	}
	if got := drain(t, f, "s", 2); len(got) != 1 || got[0].ID != 3 {
		t.Fatalf("after 2 = %+v", got)
	}
	if _, err := f.Events(context.Background(), "nope", 0); !errors.Is(err, serve.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
}

func TestFakeApprovalBusyCancel(t *testing.T) {
	asked := make(chan struct{})
	f := &servetest.Fake{Script: func(ctx context.Context, tu *servetest.Turn, m string) (string, error) {
		go func() { <-ctx.Done() }()
		ans, err := tu.Ask(ctx, serve.Approval{CallID: "c1", Tool: "shell", Agent: "host", Args: json.RawMessage(`{"cmd":"ls"}`)})
		if err != nil {
			return "", err
		}
		close(asked)
		if ans.Decision == serve.Reject {
			return "rejected: " + ans.Reason, nil
		}
		tu.Ask(ctx, serve.Approval{CallID: "c2", Tool: "shell"})
		return "", ctx.Err()
	}}
	ctx := context.Background()
	if _, err := f.Send(ctx, "s", "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Send(ctx, "s", "again"); !errors.Is(err, serve.ErrBusy) {
		t.Fatalf("second Send: %v, want ErrBusy", err)
	}
	ch, _ := f.Events(ctx, "s", 0)
	for e := range ch {
		if e.Type == event.ApprovalRequested {
			break
		}
	}
	p, _ := f.Pending("s")
	if len(p) != 1 || p[0].CallID != "c1" {
		t.Fatalf("pending = %+v", p)
	}
	if err := f.Answer("s", "c1", serve.Answer{Decision: "maybe"}); !errors.Is(err, serve.ErrInvalid) {
		t.Fatalf("bad decision: %v", err)
	}
	if err := f.Answer("s", "c1", serve.Answer{Decision: serve.Approve}); err != nil {
		t.Fatal(err)
	}
	<-asked
	if err := f.Cancel("s"); err != nil {
		t.Fatal(err)
	}
	if err := f.Wait(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	es := drain(t, f, "s", 0)
	if last := es[len(es)-1]; last.Type != event.RunFinished || last.Status != "cancelled" {
		t.Fatalf("last = %+v", last)
	}
	if err := f.Cancel("s"); !errors.Is(err, serve.ErrNotFound) {
		t.Fatalf("cancel with no turn: %v", err)
	}
}
