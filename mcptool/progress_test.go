package mcptool

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/internal/mcptest"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/tool"
)

// Every report a server sends before its answer reaches the call before
// the call returns, on both transports: many reports sent at once, then
// the answer, leave none to arrive after the call ended (and be dropped).
//
// P1: a server's progress reaches the call it is about.
func TestProgressBeforeTheAnswer(t *testing.T) {
	testpar.UnlessRace(t)
	const steps = 200
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			s := stdioSkill(t, []string{"progress"})
			if transport == "http" {
				srv := mcptest.HTTP(nil)
				defer srv.Close()
				s = httpSkill(srv.URL, []string{"progress"})
			}
			tools, notes := newPool(t, newEnv(t), Options{}).Acquire(context.Background(), s)
			if len(notes) > 0 || len(tools) != 1 {
				t.Fatalf("tools %d, notes %v", len(tools), notes)
			}
			var mu sync.Mutex
			var done []float64
			ctx := tool.WithHooks(context.Background(), tool.Hooks{Progress: func(p tool.Progress) {
				mu.Lock()
				done = append(done, p.Done)
				mu.Unlock()
			}})
			res := tools[0].Call(ctx, json.RawMessage(`{"steps":200}`), nil)
			mu.Lock()
			got := len(done)
			mu.Unlock()
			if res.IsError {
				t.Fatalf("result: %+v", res)
			}
			if got != steps {
				t.Fatalf("%d of %d reports reached the call before it returned", got, steps)
			}
			for i, d := range done {
				if d != float64(i+1) {
					t.Fatalf("report %d says %v: out of order", i, d)
				}
			}
		})
	}
}
