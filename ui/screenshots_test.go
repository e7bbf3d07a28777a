package ui_test

import (
	"bytes"
	"context"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/golden"
	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/ui"
)

// regenerate is the command that retakes the screenshots of docs/images.
const regenerate = "go test ./ui -run TestScreenshots -update"

// size is a screenshot's viewport, at device scale 1.
type size struct{ width, height int }

// stepClock is a run's clock that moves one step each time it is read,
// from a fixed start: the screenshots show the same date and a run of
// seconds (as with a real model), however loaded the machine is.
type stepClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// inTurn lets the tasks of order make their first model call one after
// another: a task's first call waits until the task before it makes its
// second, so its tool call is done. The tasks still run side by side, but
// their tool calls, and the observations a later task reads of them, come
// in the same order every run.
type inTurn struct {
	order []string
	mu    sync.Mutex
	calls map[string]int
	done  map[string]chan struct{} // closed at the task's second call
	// ended is closed when the task completed: its observations are in
	// the ledger (they are recorded as its outcome is taken in), so the
	// next task may answer and add its own after them.
	ended map[string]chan struct{}
}

func newInTurn(order ...string) *inTurn {
	g := &inTurn{order: order, calls: map[string]int{}, done: map[string]chan struct{}{}, ended: map[string]chan struct{}{}}
	for _, id := range order {
		g.done[id] = make(chan struct{})
		g.ended[id] = make(chan struct{})
	}
	return g
}

// sink closes a task's ended channel at its task.completed event.
func (g *inTurn) sink(e event.Event) {
	if ch, ok := g.ended[e.Task]; ok && e.Type == event.TaskCompleted {
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

func (g *inTurn) before(ctx context.Context, task string) error {
	i := slices.Index(g.order, task)
	if i < 0 {
		return nil
	}
	g.mu.Lock()
	g.calls[task]++
	n := g.calls[task]
	g.mu.Unlock()
	switch {
	case n == 1 && i > 0:
		select {
		case <-g.done[g.order[i-1]]:
		case <-ctx.Done():
			return ctx.Err()
		}
	case n == 2:
		close(g.done[task])
		// The final answer waits for the task before it to end: tasks end,
		// and their observations reach the ledger, in turn however the
		// machine schedules the workers.
		if i > 0 {
			select {
			case <-g.ended[g.order[i-1]]:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// The screenshots in docs/images, taken in chromium from a real run of the
// fan-out example: the web view's run page (web-view.png) and the report of
// the same run with a transcript open (report.png). Beside each PNG a .txt
// holds the page's visible text when it was taken; without -update the
// test checks that each PNG is there at its size and that the page still
// says what its .txt says, so a change to what the pages show fails until
// the screenshots are retaken. Pixels are not compared: chromium's
// rendering varies between machines.
func TestScreenshots(t *testing.T) {
	ctx, cancel := browser(t)
	defer cancel()
	// From the repository root the page names the workflow as a user
	// running the example would.
	t.Chdir("..")
	images := filepath.Join("docs", "images")
	runs := t.TempDir()
	clock := &stepClock{t: time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC), step: 15 * time.Millisecond}
	turns := newInTurn("north", "south", "east", "west", "online")
	_, done := startExample(t, runs, "fanout", example{workflow: "examples/fanout/fanout.workflow.yaml", now: clock.now, before: turns.before, sink: event.SinkFunc(turns.sink)})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the example failed: %v", err)
		}
	case <-time.After(60 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("the example did not finish")
	}
	srv := httptest.NewServer(ui.NewServer(runs, []string{secret}).Handler())
	defer srv.Close()
	// Dates and numbers read the same on every machine.
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en_US"}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "UTC"})
		return err
	}))

	// The web view: the finished run, its board and timeline.
	webView := size{1280, 900}
	do(t, ctx, chromedp.EmulateViewport(int64(webView.width), int64(webView.height)),
		chromedp.Navigate(srv.URL+"/run/fanout"), chromedp.WaitVisible(`h1 .status.finished`), chromedp.WaitVisible(`#board`))
	checkFanoutPage(t, ctx)
	screenshot(t, ctx, images, "web-view", webView)

	// The report of the same run, at its transcripts: the analyst's request
	// as sent, with the collectors' observations its flow replayed.
	rec, err := runrecord.Open(filepath.Join(runs, "fanout"))
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "fanout.html")
	var b bytes.Buffer
	if err := ui.Report(&b, rec, []string{secret}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	gen := `details.gen[data-gen="analysis"]`
	reportView := size{1280, 840}
	do(t, ctx, chromedp.EmulateViewport(int64(reportView.width), int64(reportView.height)),
		chromedp.Navigate("file://"+report), chromedp.WaitVisible(`#board`),
		chromedp.Click(gen+` > summary`),
		chromedp.Click(gen+` details.step > summary`),
		chromedp.Click(gen+` details.request > summary`),
		chromedp.WaitVisible(gen+` pre.context`))
	checkFanoutPage(t, ctx)
	// From the tokens chart down: what the web view's screenshot leaves out.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`[...document.querySelectorAll("h2")].find((h) => h.textContent === "Tokens per task").scrollIntoView()`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, images, "report", reportView)
}

// checkFanoutPage checks what a screenshot of the fan-out run must show:
// the finished run's answer and its seven tasks, all completed, a
// timeline that holds its bars, and not the key planted in its input.
func checkFanoutPage(t *testing.T, ctx context.Context) {
	t.Helper()
	if nodes, completed := count(t, ctx, "#board g.node"), count(t, ctx, `#board g.node[data-status="completed"]`); nodes != 7 || completed != 7 {
		t.Errorf("the board shows %d tasks, %d completed; want 7, 7", nodes, completed)
	}
	html, err := chromedp.Run(ctx, chromedp.OuterHTML("html"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html, secret) {
		t.Error("the planted key reached the page")
	}
	outside, err := chromedp.Run(ctx, chromedp.Evaluate[int](`(() => {
		const tl = document.querySelector("#timeline"), w = +tl.getAttribute("width");
		return [...tl.querySelectorAll("rect")].filter((r) => +r.getAttribute("x") + +r.getAttribute("width") > w).length;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if outside != 0 {
		t.Errorf("%d bars of the timeline end past its right edge", outside)
	}
	text := visibleText(t, ctx)
	for _, want := range []string{"finished", "north", "south", "east", "west", "online", "analysis", "brief", "Online sales grew fastest", "[REDACTED]"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q:\n%s", want, text)
		}
	}
}

var (
	// durations are the lengths of time a page shows: on the step clock,
	// counts of clock reads, which the interleaving of the run's
	// goroutines varies.
	durations = regexp.MustCompile(`\b\d+(\.\d+)? (ms|s)\b|\b\d+ m \d+ s\b`)
	// timelineRows are the timeline's row labels, in the order the tasks
	// started, which the scheduler decides.
	timelineRows = regexp.MustCompile(`(?s)\nTimeline\n(.*?)\n0\n`)
)

// visibleText is the page's text as a reader sees it, with its durations
// replaced and its timeline's rows sorted by name.
func visibleText(t *testing.T, ctx context.Context) string {
	t.Helper()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	text = timelineRows.ReplaceAllStringFunc(text, func(m string) string {
		rows := strings.Split(timelineRows.FindStringSubmatch(m)[1], "\n")
		slices.Sort(rows)
		return "\nTimeline\n" + strings.Join(rows, "\n") + "\n0\n"
	})
	return durations.ReplaceAllString(strings.TrimSpace(text), "<duration>") + "\n"
}

// screenshot takes the viewport as dir/name.png and the page's visible
// text as dir/name.txt with -update; without it, it checks the ones there.
func screenshot(t *testing.T, ctx context.Context, dir, name string, want size) {
	t.Helper()
	text := visibleText(t, ctx)
	pngPath, txtPath := filepath.Join(dir, name+".png"), filepath.Join(dir, name+".txt")
	if *golden.Update {
		b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pngPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(txtPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatalf("%v; regenerate screenshots: %s", err, regenerate)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s is not a PNG (%v); regenerate screenshots: %s", pngPath, err, regenerate)
	}
	if cfg.Width != want.width || cfg.Height != want.height {
		t.Errorf("%s is %dx%d, want %dx%d; regenerate screenshots: %s", pngPath, cfg.Width, cfg.Height, want.width, want.height, regenerate)
	}
	shown, err := os.ReadFile(txtPath)
	if err != nil {
		t.Fatalf("%v; regenerate screenshots: %s", err, regenerate)
	}
	if diff := cmp.Diff(string(shown), text); diff != "" {
		t.Errorf("%s no longer shows what the page says (-screenshot +page):\n%s\nregenerate screenshots: %s", pngPath, diff, regenerate)
	}
}
