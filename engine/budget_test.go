package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/spec"
)

// Token budgets: once the run has used limits.max-input-tokens (or
// max-output-tokens), the next model call is refused and the run ends with
// an error naming the budget; without a budget the same run finishes.
func TestTokenBudgets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in, out  int
		wantCall int    // model calls made
		wantErr  string // "" for a finished run
	}{
		{"no budget", 0, 0, 4, ""},
		{"input", 250, 0, 3, "limits.max-input-tokens is 250"},
		{"output", 0, 20, 2, "limits.max-output-tokens is 20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := project(skill("aa", "1.0.0", spec.ChannelInline))
			p.Workflow.Limits.MaxInputTokens, p.Workflow.Limits.MaxOutputTokens = tc.in, tc.out
			host := scriptFunc([]step{read("aa"), call("aa_echo", map[string]string{"text": "a"}), call("aa_echo", map[string]string{"text": "b"}), say("done")}, nil)
			calls := 0
			_, _, err := funcRun(t, context.Background(), p, Options{}, func(ctx context.Context, req *model.Request) (*model.Response, error) {
				calls++
				resp, err := host(ctx, req)
				if resp != nil {
					resp.Usage = model.Usage{InputTokens: 100, OutputTokens: 10}
				}
				return resp, err
			})
			if calls != tc.wantCall {
				t.Errorf("%d model calls, want %d", calls, tc.wantCall)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (!errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want ErrBudget naming %q", err, tc.wantErr)
			}
		})
	}
}
