package engine_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/internal/testpar"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/tokens"
	"github.com/fsdrun/fsd/view"
)

// billed stands for a provider: it answers as the wrapped model does and
// reports usage, as real providers do.
type billed struct{ model.Model }

func (b billed) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp, err := b.Model.Generate(ctx, req)
	if resp != nil {
		resp.Usage = model.Usage{InputTokens: 1000, CachedInputTokens: 600, OutputTokens: 20}
	}
	return resp, err
}

// vocabChild is set in the child process TestProviderRunsLoadNoVocabulary
// starts: "billed" or "unbilled".
const vocabChild = "FSD_TEST_VOCAB_CHILD"

// A run whose provider reports usage never loads the
// o200k vocabulary — loading the workflow (catalog budget), the run (a
// host reading skills, a board of tasks), its record and the live board
// all go without it. The same runs with a model that reports no usage
// load it (the engine estimates), which shows the check can fail. Each
// case runs in a fresh process: the vocabulary, once loaded, stays.
func TestProviderRunsLoadNoVocabulary(t *testing.T) {
	testpar.UnlessRace(t)
	if mode := os.Getenv(vocabChild); mode != "" {
		vocabChildRun(t, mode == "billed")
		return
	}
	for _, mode := range []string{"billed", "unbilled"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestProviderRunsLoadNoVocabulary$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), vocabChild+"="+mode)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", mode, err, out)
		}
		if !strings.Contains(string(out), "vocabulary loaded: "+map[string]string{"billed": "false", "unbilled": "true"}[mode]) {
			t.Errorf("%s: want the vocabulary loaded only for the unbilled runs:\n%s", mode, out)
		}
	}
}

func vocabChildRun(t *testing.T, bill bool) {
	for _, wf := range []string{"../examples/conversation.workflow.yaml", "../examples/fanout/fanout.workflow.yaml"} {
		p, diags := spec.LoadProject(wf)
		if err := diags.Err(); err != nil {
			t.Fatal(err)
		}
		s, err := scripted.Load(filepath.Join(p.Workflow.Dir, p.Workflow.Script))
		if err != nil {
			t.Fatal(err)
		}
		var run *engine.Run
		var m model.Model = scripted.New(s, func(id string) (string, error) { return run.Handle(id) })
		if bill {
			m = billed{m}
		}
		board := view.NewBoard(io.Discard, nil)
		if run, err = engine.New(p, engine.Options{Model: m, RunsDir: t.TempDir(), Sink: board}); err != nil {
			t.Fatal(err)
		}
		if _, err := run.Execute(context.Background(), ""); err != nil {
			t.Fatalf("%s: %v", wf, err)
		}
		if !strings.Contains(board.Frame(), "tokens ") {
			t.Errorf("the live board shows no tokens:\n%s", board.Frame())
		}
	}
	t.Logf("vocabulary loaded: %v", tokens.Loaded())
	if bill == tokens.Loaded() {
		t.Errorf("billed %v, vocabulary loaded %v", bill, tokens.Loaded())
	}
}
