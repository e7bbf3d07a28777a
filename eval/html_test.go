package eval_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/fsdrun/fsd/eval"
)

// secret is planted in the report: the page must not show it.
const secret = "sk-eval-planted-0123456789abcdef"

// chromium finds Debian's chromium, as ui's browser tests do. Without it
// the test skips with a clear message, unless CI is set: there it must
// run (.ci/run installs it).
func chromium(t *testing.T) string {
	for _, p := range []string{os.Getenv("FSD_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); p != "" && err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed and CI is set: install it (apt-get install chromium) — .ci/run does")
	}
	t.Skip("chromium is not installed (apt-get install chromium); skipping the browser test. Under CI=true it fails instead.")
	return ""
}

// browser starts a headless chromium for the test.
func browser(t *testing.T) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)), chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(1280, 1000),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// knownReport is testdata/eval-report.json — fsd eval examples/evals
// --model standin with greeter's description cut to "Greets people by
// name.", a --baseline of the uncut run and --vary greeter.description=
// the uncut text — with the planted key in a query and the variant's
// description.
func knownReport(t *testing.T) *eval.Report {
	t.Helper()
	rep, err := eval.ReadReport("testdata/eval-report.json")
	if err != nil {
		t.Fatal(err)
	}
	rep.Triggers[0].Query += " " + secret
	rep.Variants[0].Description += " " + secret
	return rep
}

// The eval page is one file: nothing fetched, no script, the key masked.
func TestHTMLSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := knownReport(t).WriteHTML(&b, []string{secret}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{secret, "src=", `href="/`, "<script", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("the eval page holds %q", bad)
		}
	}
	if !strings.Contains(page, "say hello to Grace") {
		t.Error("the eval page lacks the first query")
	}
}

// The eval page in chromium: it loads without a console message of
// error level and shows the known report's numbers — totals, the
// matrix of runs with what each read, precision and recall, the
// confusion table, the baseline's lost recall in red, the variant beside.
func TestHTMLInBrowser(t *testing.T) {
	ctx := browser(t)
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				problems = append(problems, "console."+string(e.Type))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, "log: "+e.Entry.Text)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "eval.html")
	var b bytes.Buffer
	if err := knownReport(t).WriteHTML(&b, []string{secret}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(report, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(lctx, chromedp.Navigate("file://"+report)); err != nil {
		t.Fatalf("load the page: %v", err)
	}

	text := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return s
	}
	checks := []struct{ js, want string }{
		{`document.querySelector("#verdict").textContent`, "Below the threshold"},
		{`[...document.querySelectorAll("#totals td")].map((td) => td.textContent).join("|")`, "3/4|1/3|14|4261|307|0.0055"},
		{`[...document.querySelectorAll("#triggers tr[data-id] td.rate")].map((td) => td.textContent.trim()).join("|")`, "0.00 (0/2)|0.00 (0/2)|1.00 (2/2)|0.50 (1/2)"},
		// What each repeat read: greeter/1 nothing twice, roster/2 roster once.
		{`[...document.querySelectorAll('#triggers tr[data-id="greeter/1"] a.cell')].map((a) => a.textContent).join(" ")`, "∅ ∅"},
		{`[...document.querySelectorAll('#triggers tr[data-id="roster/2"] a.cell')].map((a) => a.textContent + ":" + a.className).join(" ")`, "roster:cell fail ∅:cell pass"},
		{`String(document.querySelectorAll("#triggers a.cell[href^='runs/']").length + document.querySelectorAll("#cases a.cell[href^='runs/']").length)`, "14"},
		{`[...document.querySelectorAll('#skills tr[data-skill] td')].map((td) => td.textContent).join("|")`, "greeter|1/2|–|0.00|0|0|2|roster|2/2|0.67|1.00|2|1|0"},
		{`document.querySelector('#skills tr[data-skill="greeter"] td.recall').className`, "n recall worse"},
		{`[...document.querySelectorAll("#confusion tr")].map((tr) => [...tr.children].map((c) => c.textContent).join(",")).join("|")`,
			"queries of,read roster,read nothing|greeter (should trigger),0,2|greeter (should not),2,0|roster (should trigger),2,0|roster (should not),1,1"},
		{`[...document.querySelectorAll("#cases tr[data-id] td:nth-child(2)")].map((td) => td.textContent).join("|")`, "0.00|1.00|0.00"},
		{`String(document.querySelectorAll("#baseline tr.worse").length)`, "6"},
		{`getComputedStyle(document.querySelector('#skills tr[data-skill="greeter"] td.recall')).color`, "rgb(209, 61, 61)"},
		{`[...document.querySelectorAll('section.variant tr[data-skill="greeter"]')].map((tr) => tr.className + ":" + tr.querySelector("td.after").textContent).join("|")`, "better:1.00|:1.00"},
	}
	for _, c := range checks {
		if got := text(c.js); got != c.want {
			t.Errorf("%s\n got %q\nwant %q", c.js, got, c.want)
		}
	}
	if strings.Contains(text(`document.documentElement.outerHTML`), secret) {
		t.Error("the planted key reached the page")
	}
	if dir := os.Getenv("FSD_SCREENSHOTS"); dir != "" {
		if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "eval.png"), png, 0o644)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the page wrote errors: %q", problems)
	}
}
