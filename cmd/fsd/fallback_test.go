package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fsdrun/fsd/runrecord"
)

// gate is a stand-in provider in front of another: while down it answers
// every request with status and body (and asks for a 1 ms wait, so the
// retries take no time), otherwise the inner server answers. It counts
// what it answered each way.
type gate struct {
	mu           sync.Mutex
	down         bool
	status       int
	body         string
	passed, shut int
}

func (g *gate) set(down bool) { g.mu.Lock(); g.down = down; g.mu.Unlock() }

func (g *gate) counts() (passed, shut int) { g.mu.Lock(); defer g.mu.Unlock(); return g.passed, g.shut }

func (g *gate) serve(t *testing.T, inner *httptest.Server) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		down := g.down
		if down {
			g.shut++
		} else {
			g.passed++
		}
		g.mu.Unlock()
		if !down {
			inner.Config.Handler.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After-Ms", "1")
		w.WriteHeader(g.status)
		fmt.Fprint(w, g.body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A workflow whose model is a fallback chain, Anthropic then OpenAI,
// against stand-ins. Anthropic answers the host's first step, then is
// overloaded (529) until its retries are spent: OpenAI answers the
// second step, the switch is recorded, priced by the model that answered
// and shown by fsd show. OpenAI then refuses a request (400, not a reason
// to fail over) and the run fails. With Anthropic healthy again, the
// resumed run goes on with OpenAI, the model that answered last: the
// journal says so, and Anthropic is not asked.
func TestFallbackChainFailsOverAndResumeKeepsTheModel(t *testing.T) {
	ant := &gate{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}
	antInner, _ := scriptedAnthropic(t, func(gen string, step int) fakeReply { return helloReplies[0] })
	antSrv := ant.serve(t, antInner)
	oai := &gate{status: 400, body: `{"error":{"message":"Invalid request: try again later","type":"invalid_request_error"}}`}
	oaiInner, _ := fakeOpenAI(t, []fakeReply{helloReplies[1], {text: "Ada is welcomed."}})
	oaiSrv := oai.serve(t, oaiInner)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	t.Setenv("ANTHROPIC_BASE_URL", antSrv.URL)
	t.Setenv("OPENAI_API_KEY", "sk-openai-test")
	t.Setenv("OPENAI_BASE_URL", oaiSrv.URL+"/v1")

	skills, err := filepath.Abs("../../examples/hello/skills")
	if err != nil {
		t.Fatal(err)
	}
	wf := filepath.Join(t.TempDir(), "hello.workflow.yaml")
	if err := os.WriteFile(wf, []byte(fmt.Sprintf(`name: hello
skills: [%q]
model: [anthropic/claude-test, openai/gpt-test]
host: {prompt: You welcome new colleagues.}
input: Welcome Ada to the team.
prices:
  anthropic/claude-test: {input: 3, output: 15}
  openai/gpt-test: {input: 1, output: 2}
`, skills)), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(t.TempDir(), "runs")

	// Anthropic answers one request, then is overloaded; OpenAI answers
	// one, then refuses.
	var once sync.Once
	antHandler := antSrv.Config.Handler
	antSrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		antHandler.ServeHTTP(w, r)
		once.Do(func() { ant.set(true) })
	})
	var oaiOnce sync.Once
	oaiHandler := oaiSrv.Config.Handler
	oaiSrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		oaiHandler.ServeHTTP(w, r)
		oaiOnce.Do(func() { oai.set(true) })
	})
	code, _, errs := fsd(t, "run", wf, "--runs-dir", runs)
	if code == exitOK {
		t.Fatalf("the run should fail on OpenAI's 400")
	}
	if !strings.Contains(errs, "HTTP 400") {
		t.Errorf("stderr does not say why the run failed:\n%s", errs)
	}
	if passed, shut := ant.counts(); passed != 1 || shut != 5 {
		t.Errorf("anthropic answered %d and refused %d requests, want 1 and 5 (four retries, then the next model)", passed, shut)
	}
	if passed, shut := oai.counts(); passed != 1 || shut != 1 {
		t.Errorf("openai answered %d and refused %d requests, want 1 and 1 (a 400 is not retried nor failed over)", passed, shut)
	}
	dirs, _ := os.ReadDir(runs)
	if len(dirs) != 1 {
		t.Fatalf("%d runs", len(dirs))
	}
	id := dirs[0].Name()

	// The resume: Anthropic is back, OpenAI too; the host goes on with
	// OpenAI.
	ant.set(false)
	oai.set(false)
	antBefore, _ := ant.counts()
	code, out, errs := fsd(t, "resume", id, "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	if strings.TrimSpace(out) != "Ada is welcomed." {
		t.Errorf("answer %q", out)
	}
	if passed, _ := ant.counts(); passed != antBefore {
		t.Errorf("the resumed run asked anthropic %d times; it should go on with openai, the model that answered", passed-antBefore)
	}
	if passed, _ := oai.counts(); passed != 2 {
		t.Errorf("openai answered %d requests in all, want 2", passed)
	}

	// Priced by the model that answered each step: Anthropic's first
	// (100 in, 10 out at 3 and 15), OpenAI's two (100 in, 10 out at 1
	// and 2 each).
	var sum runrecord.Summary
	b, err := os.ReadFile(filepath.Join(runs, id, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	want := (100*3+10*15)/1e6 + 2*(100*1+10*2)/1e6
	if !closeTo(sum.Cost, want) {
		t.Errorf("cost %v, want %v", sum.Cost, want)
	}

	// fsd show --requests says which model answered each step.
	code, shown, errs := fsd(t, "show", id, "--requests", "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("show: exit %d: %s", code, errs)
	}
	for _, line := range []string{
		"=== step 1 · response · tokens 100 in, 10 out · cost",
		"=== step 2 · response · tokens 100 in, 10 out · cost",
	} {
		if !strings.Contains(shown, line) {
			t.Errorf("show lacks %q:\n%s", line, shown)
		}
	}
	if n := strings.Count(shown, "answered by anthropic/claude-test"); n != 1 {
		t.Errorf("%d steps answered by anthropic, want 1:\n%s", n, shown)
	}
	if n := strings.Count(shown, "answered by openai/gpt-test"); n != 2 {
		t.Errorf("%d steps answered by openai, want 2:\n%s", n, shown)
	}
}
