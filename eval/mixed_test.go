package eval_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/eval"
)

// Suites set their own repeat: and threshold:, and each case is measured
// by its own suite's: the report says so, case by case, and claims no
// one threshold (the first suite's) for them all. "welcome Grace aboard"
// is a near miss, read on 2 of 4 repeats: 0.50, below its suite's 0.9.
func TestSuitesKeepTheirThresholds(t *testing.T) {
	dir := t.TempDir()
	wf, err := filepath.Abs("testdata/triggers/triggers.workflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.eval.yaml"), filepath.Join(dir, "b.eval.yaml")
	for file, body := range map[string]string{
		a: "repeat: 1\nthreshold: 0.2\ntriggers:\n  greeter:\n    - query: say hello to Ada\n",
		b: "repeat: 4\nthreshold: 0.9\ntriggers:\n  greeter:\n    - query: welcome Grace aboard\n",
	} {
		if err := os.WriteFile(file, []byte("workflow: "+wf+"\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep := run(t, eval.Options{}, a, b)
	if len(rep.Triggers) != 2 || rep.Triggers[0].Threshold != 0.2 || rep.Triggers[1].Threshold != 0.9 || rep.Triggers[1].Passed {
		t.Fatalf("triggers %+v: want thresholds 0.2 and 0.9, the second failing", rep.Triggers)
	}
	fails := rep.Failures()
	if len(fails) != 1 || !strings.HasSuffix(fails[0].Message, "read in 0.50 (2/4) runs; want at least 0.90") {
		t.Errorf("failures %v: want greeter/2's own threshold, 0.90", fails)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(text.String(), "\n"); head != "Trigger cases (1 to 4 runs each, threshold 0.20 to 0.90)" {
		t.Errorf("text heading %q: want both suites' repeats and thresholds", head)
	}
	// One suite of one query run once: "1 run", in the heading and the totals.
	text.Reset()
	if err := run(t, eval.Options{}, a).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if s := text.String(); !strings.HasPrefix(s, "Trigger cases (1 run each, threshold 0.20)") || !strings.Contains(s, "; 1 run, ") {
		t.Errorf("one run said as many:\n%s", s)
	}
	var junit bytes.Buffer
	if err := rep.WriteJUnit(&junit); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(junit.String(), "want at least 0.90") {
		t.Errorf("junit lacks greeter/2's threshold:\n%s", junit.String())
	}
}
