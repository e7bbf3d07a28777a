package ui_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/scripted"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/ui"
)

// secret is planted in a run's input: no page may show it.
const secret = "sk-ui-planted-0123456789abcdef"

// chromium finds Debian's chromium. Without it the test skips with a
// clear message, unless CI is set: there it must run (.ci/run installs it).
func chromium(t *testing.T) string {
	for _, p := range []string{os.Getenv("FSD_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed and CI is set: install it (apt-get install chromium) — .ci/run does")
	}
	t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test. Under CI=true it fails instead.")
	return ""
}

// screenshots is the folder the screenshots go to: $FSD_SCREENSHOTS, or
// fsd-ui-screenshots in the temp folder.
func screenshots(t *testing.T) string {
	dir := os.Getenv("FSD_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "fsd-ui-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// example is a run of an example workflow on its scripted model.
type example struct {
	workflow string // the example's workflow file; the fan-out when empty
	// gateTask's model calls wait until gate is closed.
	gateTask string
	gate     chan struct{}
	sink     event.Sink
	now      func() time.Time // the run's clock; nil is time.Now
	// before, if set, is called before each model call of a task and
	// may hold it.
	before func(ctx context.Context, task string) error
	// key is the key planted in the input; "" is secret.
	key string
}

// startExample starts the example's run as id under runs, its input
// carrying the planted key (ex.key, or secret).
func startExample(t *testing.T, runs, id string, ex example) (*engine.Run, <-chan error) {
	t.Helper()
	if ex.workflow == "" {
		ex.workflow = "../examples/fanout/fanout.workflow.yaml"
	}
	p, diags := spec.LoadProject(ex.workflow)
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	s, err := scripted.Load(filepath.Join(p.Workflow.Dir, p.Workflow.Script))
	if err != nil {
		t.Fatal(err)
	}
	var run *engine.Run
	inner := scripted.New(s, func(id string) (string, error) { return run.Handle(id) })
	m := model.Func(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if req.Caller.TaskID == ex.gateTask && ex.gate != nil {
			select {
			case <-ex.gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if ex.before != nil {
			if err := ex.before(ctx, req.Caller.TaskID); err != nil {
				return nil, err
			}
		}
		return inner.Generate(ctx, req)
	})
	seed := [32]byte{7}
	// Commit-before-effects durability, as the show goldens record theirs:
	// a worker's final answer never gives its slot away while it waits for
	// the disk, so the flow observations keep the order the turns set even
	// on a loaded machine (the screenshots' text depends on it).
	run, err = engine.New(p, engine.Options{Model: m, RunsDir: runs, RunID: id, Seed: &seed, Sink: ex.sink, Now: ex.now, Durability: spec.DurabilityEffects})
	if err != nil {
		t.Fatal(err)
	}
	key := ex.key
	if key == "" {
		key = secret
	}
	done := make(chan error, 1)
	go func() {
		_, err := run.Execute(context.Background(), p.Workflow.Input+" (key "+key+")")
		done <- err
	}()
	return run, done
}

// browser opens a tab of its own for the test, in a browser context of
// its own (no cookies, storage or cache from another test's tab), in the
// one chromium the test process shares: a chromium's start is a second or
// more of CPU, which each browser test paid. Cancel closes the tab;
// TestMain stops chromium.
func browser(t *testing.T) (context.Context, context.CancelFunc) {
	bin := chromium(t)
	chrome.once.Do(func() { chrome.ctx, chrome.stop, chrome.err = startChromium(bin) })
	if chrome.err != nil {
		t.Fatalf("start chromium: %v", chrome.err)
	}
	ctx, cancel := chromedp.NewContext(chrome.ctx, chromedp.WithNewBrowserContext())
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("open a tab in chromium: %v", err)
	}
	return ctx, cancel
}

// chrome is the test process's chromium, started by the first test that
// asks for a browser.
var chrome struct {
	once sync.Once
	ctx  context.Context
	stop func()
	err  error
}

func startChromium(bin string) (context.Context, func(), error) {
	profile, err := os.MkdirTemp("", "fsd-ui-chromium-")
	if err != nil {
		return nil, nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.UserDataDir(profile),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1280, 1000),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	stop := func() { cancel(); acancel(); os.RemoveAll(profile) }
	// Start the browser on this context (not on one with a timeout: that
	// would end the browser with it); each step is bounded in do.
	if err := chromedp.Do(ctx); err != nil {
		stop()
		return nil, nil, err
	}
	return ctx, stop, nil
}

// stopChromium stops the test process's chromium, if a test started it.
func stopChromium() {
	if chrome.stop != nil {
		chrome.stop()
	}
}

// count is how many elements a selector matches.
func count(t *testing.T, ctx context.Context, sel string) int {
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// do runs steps, each bounded to 20 s; on failure it reports what the
// page shows.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	for _, st := range steps {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := chromedp.Do(sctx, st)
		cancel()
		if err != nil {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 2000)`))
			t.Fatalf("%v; the page shows:\n%s", err, text)
		}
	}
}

func shot(t *testing.T, ctx context.Context, dir, name string) {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The UI in a real headless chromium: the runs list, the run page of the
// finished fan-out example (7 tasks), a task's request expanded as sent,
// and a live run whose page follows its tasks to the end without a reload.
func TestUIInBrowser(t *testing.T) {
	ctx, cancel := browser(t)
	defer cancel()
	dir := screenshots(t)
	runs := t.TempDir()
	if _, done := startExample(t, runs, "fanout-finished", example{}); <-done != nil {
		t.Fatal("the example failed")
	}
	srv := httptest.NewServer(ui.NewServer(runs, []string{secret}).Handler())
	defer srv.Close()

	// The runs list.
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`body[data-ready]`))
	if rows := count(t, ctx, "#runs tr[data-run]"); rows != 1 {
		t.Errorf("runs list shows %d runs, want 1", rows)
	}
	shot(t, ctx, dir, "runs.png")

	// The finished run: board, timeline, tokens, transcripts.
	do(t, ctx, chromedp.Navigate(srv.URL+"/run/fanout-finished"), chromedp.WaitVisible(`#board`))
	nodes, completed := count(t, ctx, "#board g.node"), count(t, ctx, `#board g.node[data-status="completed"]`)
	bars, gens := count(t, ctx, "#timeline rect.call"), count(t, ctx, "details.gen")
	if nodes != 7 || completed != 7 || bars < 7 || gens != 7 {
		t.Errorf("run page: %d nodes (%d completed), %d timeline bars, %d transcripts; want 7, 7, ≥7, 7", nodes, completed, bars, gens)
	}
	if count(t, ctx, "#tokens rect") < 7 {
		t.Error("no tokens chart")
	}
	if labels := count(t, ctx, "#timeline text.bar-label"); labels != 7 {
		t.Errorf("%d labelled task bars on the timeline, want 7", labels)
	}
	// A typed (JSON) answer or result is shown indented.
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`pretty('{"region":"north","units":[1,2]}') + "|" + pretty("plain {text}")`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"region\": \"north\",\n  \"units\": [\n    1,\n    2\n  ]\n}|plain {text}"; shown != want {
		t.Errorf("pretty: %q, want %q", shown, want)
	}
	shot(t, ctx, dir, "run.png")

	// The analyst's first request, expanded: its flow observations as sent.
	do(t, ctx,
		chromedp.Click(`details.gen[data-gen="analysis"] > summary`),
		chromedp.Click(`details.gen[data-gen="analysis"] details.step > summary`),
		chromedp.Click(`details.gen[data-gen="analysis"] details.request > summary`),
		chromedp.WaitVisible(`details.gen[data-gen="analysis"] pre.context`),
		chromedp.ScrollIntoView(`details.gen[data-gen="analysis"]`))
	sent, err := chromedp.Run(ctx, chromedp.Text(`details.gen[data-gen="analysis"] pre.context`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sent, "<observations>") || !strings.Contains(sent, "quarterly_sales") {
		t.Errorf("the expanded request lacks the flow observations: %q", sent)
	}
	shot(t, ctx, dir, "request.png")

	// A task that ran on a remote worker (fsd run --nats): its transcript
	// is in the record, its requests are not; its steps say so.
	dropRequests(t, filepath.Join(runs, "fanout-finished"), "tasks/north.jsonl")
	do(t, ctx, chromedp.Navigate(srv.URL+"/run/fanout-finished"), chromedp.WaitVisible(`#board`),
		chromedp.Click(`details.gen[data-gen="north"] > summary`),
		chromedp.Click(`details.gen[data-gen="north"] details.step > summary`),
		chromedp.WaitVisible(`details.gen[data-gen="north"] details.request > summary`))
	remote, err := chromedp.Run(ctx, chromedp.Text(`details.gen[data-gen="north"] details.request > summary`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(remote, "ran on a worker") || count(t, ctx, `details.gen[data-gen="north"] details.step`) != 2 {
		t.Errorf("a remote task's step: %q", remote)
	}

	// A live run: the page follows it as tasks complete.
	gate := make(chan struct{})
	_, done := startExample(t, runs, "fanout-live", example{gateTask: "analysis", gate: gate})
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec, err := runrecord.Open(filepath.Join(runs, "fanout-live"))
		if err == nil && len(rec.Gens) >= 6 {
			break
		}
		if time.Now().After(deadline) {
			close(gate)
			t.Fatalf("the live run did not reach the analysis task: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/run/fanout-live"),
		chromedp.WaitVisible(`#board g.node[data-task="analysis"][data-status="running"]`)); err != nil {
		close(gate)
		t.Fatal(err)
	}
	shot(t, ctx, dir, "live-running.png")
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.WaitVisible(`#board g.node[data-task="brief"][data-status="completed"]`),
		chromedp.WaitVisible(`h1 .status.finished`))
	html, err := chromedp.Run(ctx, chromedp.OuterHTML("html"))
	if err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, dir, "live-finished.png")
	if strings.Contains(html, secret) {
		t.Error("the planted key reached the page")
	}

	// The report: one file, nothing fetched, the same page.
	rec, err := runrecord.Open(filepath.Join(runs, "fanout-finished"))
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "run.html")
	f, err := os.Create(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := ui.Report(f, rec, []string{secret}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, _ := os.ReadFile(report)
	if strings.Contains(string(b), secret) || strings.Contains(string(b), "src=") || strings.Contains(string(b), "href=\"/") {
		t.Error("the report holds the key or fetches something")
	}
	do(t, ctx, chromedp.Navigate("file://"+report), chromedp.WaitVisible(`#board`))
	if nodes := count(t, ctx, "#board g.node"); nodes != 7 {
		t.Errorf("report: %d nodes", nodes)
	}
	shot(t, ctx, dir, "report.png")
}

// dropRequests removes a generator's request and response lines from a
// run record, as if a remote worker had run it.
func dropRequests(t *testing.T, dir, gen string) {
	t.Helper()
	path := filepath.Join(dir, runrecord.RequestsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !strings.Contains(line, `"gen":"`+gen+`"`) {
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(kept, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A page open on a run that waits for an approval shows the pending call
// and keeps streaming: what the run does after the page opened (the
// answer, the task's end, the run's end) shows up without a reload.
func TestUIWaitingRunStaysLive(t *testing.T) {
	ctx, cancel := browser(t)
	defer cancel()
	dir := screenshots(t)
	runs := t.TempDir()
	asked := make(chan event.Event, 1)
	sink := event.SinkFunc(func(e event.Event) {
		if e.Type == event.ApprovalRequested {
			asked <- e
		}
	})
	run, done := startExample(t, runs, "release-waiting", example{workflow: "../examples/release/release.workflow.yaml", sink: sink})
	var e event.Event
	select {
	case e = <-asked:
	case err := <-done:
		t.Fatalf("the run ended without asking for approval: %v", err)
	case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("no approval was asked")
	}
	// Answered once, whatever happens, so the run ends with the test.
	var once sync.Once
	answer := func() {
		once.Do(func() {
			if err := run.Answer(runrecord.Answer{Call: e.Approval, Decision: runrecord.Approved, By: "test"}); err != nil {
				t.Error(err)
			}
		})
	}
	ended := false
	defer func() {
		if !ended {
			answer()
			<-done
		}
	}()
	srv := httptest.NewServer(ui.NewServer(runs, []string{secret}).Handler())
	defer srv.Close()

	pending := fmt.Sprintf(`#pending .pending[data-call=%q]`, e.Approval)
	do(t, ctx, chromedp.Navigate(srv.URL+"/run/release-waiting"),
		chromedp.WaitVisible(pending),
		chromedp.WaitVisible(`h1 .status.waiting`),
		chromedp.WaitVisible(`#board g.node[data-task="ship"][data-status="waiting"]`))
	call, err := chromedp.Run(ctx, chromedp.Text(pending))
	if err != nil {
		t.Fatal(err)
	}
	// The header keeps the running total in sight.
	header, err := chromedp.Run(ctx, chromedp.Text(`#live`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(header, "● live · tokens ") || strings.HasPrefix(header, "● live · tokens 0 in") {
		t.Errorf("header of a live run: %q, want its tokens so far", header)
	}
	for _, want := range []string{"publish", "task ship", `"version": "1.4.0"`, "fsd approve release-waiting " + e.Approval} {
		if !strings.Contains(call, want) {
			t.Errorf("the pending call on the page lacks %q:\n%s", want, call)
		}
	}
	shot(t, ctx, dir, "live-waiting.png")

	// The page opened while the run waited; what follows the answer must
	// reach it through the stream.
	answer()
	ended = true
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.WaitVisible(`#board g.node[data-task="ship"][data-status="completed"]`),
		chromedp.WaitVisible(`h1 .status.finished`),
		chromedp.WaitVisible(`#answer`))
	if n := count(t, ctx, "#pending"); n != 0 {
		t.Errorf("the finished run's page still lists %d pending calls", n)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(`#answer`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "published 1.4.0 to stable") {
		t.Errorf("answer on the page: %q", text)
	}
	shot(t, ctx, dir, "live-waiting-answered.png")
}
