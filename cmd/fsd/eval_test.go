package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/eval"
)

// evalProject writes a workflow with two skills and a trigger suite whose
// stand-in rates are known: greeter/1 always read, greeter/2 a near miss
// (read on repeats 1 and 3), report/1 always read.
func evalProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "wf.workflow.yaml"), "name: wf\nskills: [./skills]\nhost: {prompt: You help.}\n")
	write(t, filepath.Join(dir, "skills/greeter/greeter.skill.yaml"),
		"id: greeter\nname: Greeter\ndescription: Greets people by name; say hello or welcome someone.\nversion: 1.0.0\ninstructions: Greet.\n")
	write(t, filepath.Join(dir, "skills/report/report.skill.yaml"),
		"id: report\nname: Report\ndescription: Writes the weekly status report.\nversion: 1.0.0\ninstructions: Report.\n")
	write(t, filepath.Join(dir, "t.eval.yaml"), `workflow: wf.workflow.yaml
triggers:
  greeter:
    - query: say hello to Ada
    - query: welcome Grace aboard
  report:
    - query: the weekly status report
    - query: say hello to everyone
      should-trigger: false
`)
	return dir
}

// The exit code follows the threshold: 0.67 passes 0.5 and fails 0.7.
func TestEvalThresholdExitCodes(t *testing.T) {
	t.Parallel()
	dir := evalProject(t)
	suite := filepath.Join(dir, "t.eval.yaml")
	runs := filepath.Join(dir, ".fsd", "runs")
	code, out, errOut := fsd(t, "eval", suite, "--model", "standin", "--runs-dir", runs)
	if code != exitOK {
		t.Fatalf("exit %d at the default threshold; stderr %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "greeter/2  0.67 (2/3)") {
		t.Errorf("text report lacks greeter/2's rate:\n%s", out)
	}
	code, _, errOut = fsd(t, "eval", suite, "--model", "standin", "--runs-dir", runs, "--threshold", "0.7")
	if code != exitProblems || !strings.Contains(errOut, "below the threshold: 3/4 trigger queries") {
		t.Errorf("--threshold 0.7: exit %d, stderr %q; want 1 and the count", code, errOut)
	}
	code, _, errOut = fsd(t, "eval", suite, "--threshold", "2")
	if code != exitUsage {
		t.Errorf("--threshold 2: exit %d (%s), want 2", code, errOut)
	}
	// Each run is a normal run: fsd show reads its record.
	code, out, _ = fsd(t, "eval", suite, "--model", "standin", "--runs-dir", runs, "--repeat", "1", "--format", "json")
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK {
		t.Fatalf("--format json: exit %d, %v", code, err)
	}
	if code, show, errOut := fsd(t, "show", rep.Triggers[0].Runs[0].RunID, "--runs-dir", runs); code != exitOK || !strings.Contains(show, "I read the skill greeter.") {
		t.Errorf("fsd show of an eval run: exit %d, %s\n%s", code, errOut, show)
	}
}

// A skill-creator trigger set on the command line is for the skill whose
// folder holds it, or --skill's.
func TestEvalTriggerSetFile(t *testing.T) {
	t.Parallel()
	dir := evalProject(t)
	set := filepath.Join(dir, "skills", "greeter", "trigger.json")
	write(t, set, `[{"query": "say hello to Ada", "should_trigger": true}, {"query": "the weekly status report", "should_trigger": false}]`)
	args := []string{"eval", set, "--workflow", filepath.Join(dir, "wf.workflow.yaml"), "--model", "standin", "--runs-dir", filepath.Join(dir, ".fsd", "runs"), "--repeat", "1"}
	code, out, errOut := fsd(t, args...)
	if code != exitOK || !strings.Contains(out, "greeter/2") || !strings.Contains(out, "read report×1") {
		t.Errorf("exit %d (%s):\n%s", code, errOut, out)
	}
	code, out, _ = fsd(t, append(args, "--skill", "report")...)
	if code != exitProblems || !strings.Contains(out, "report/1") {
		t.Errorf("--skill report: exit %d, want 1 (its should-trigger query reads greeter):\n%s", code, out)
	}
}

// --baseline marks the recall a worse description lost.
func TestEvalBaseline(t *testing.T) {
	t.Parallel()
	dir := evalProject(t)
	suite := filepath.Join(dir, "t.eval.yaml")
	runs := filepath.Join(dir, ".fsd", "runs")
	_, before, _ := fsd(t, "eval", suite, "--model", "standin", "--runs-dir", runs, "--format", "json")
	base := filepath.Join(dir, "base.json")
	write(t, base, before)
	write(t, filepath.Join(dir, "skills/greeter/greeter.skill.yaml"),
		"id: greeter\nname: Greeter\ndescription: Greets people by name.\nversion: 1.0.0\ninstructions: Greet.\n")
	code, out, _ := fsd(t, "eval", suite, "--model", "standin", "--runs-dir", runs, "--baseline", base)
	if code != exitProblems {
		t.Errorf("exit %d, want 1: greeter's queries fail now", code)
	}
	for _, want := range []string{
		`WORSE trigger greeter "say hello to Ada" rate: 1.00 -> 0.00`,
		"WORSE skill greeter recall: 0.83 -> 0.00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("baseline section lacks %q:\n%s", want, out)
		}
	}
	_, gh, _ := fsd(t, "eval", suite, "--model", "standin", "--runs-dir", runs, "--baseline", base, "--format", "github")
	if !strings.Contains(gh, "::error file="+filepath.ToSlash(suite)+",line=4,col=14,title=fsd eval::trigger case greeter/1: skill greeter read in 0.00 (0/3) runs; want at least 0.50") ||
		!strings.Contains(gh, "::warning title=fsd eval::skill greeter: recall went from 0.83 to 0.00") {
		t.Errorf("github annotations:\n%s", gh)
	}
}

// A replayed eval answers from its cassettes, and a request that differs
// from the recording (a description changed) fails the run and the eval.
func TestEvalRecordReplay(t *testing.T) {
	t.Parallel()
	dir := evalProject(t)
	suite := filepath.Join(dir, "t.eval.yaml")
	runs := filepath.Join(dir, ".fsd", "runs")
	cas := filepath.Join(dir, "cassettes")
	code, recorded, errOut := fsd(t, "eval", suite, "--model", "standin", "--runs-dir", runs, "--record", cas)
	if code != exitOK {
		t.Fatalf("record: exit %d: %s", code, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(cas, "*.jsonl"))
	if len(files) != 12 {
		t.Errorf("%d cassettes, want one per case and repeat: 12", len(files))
	}
	code, replayed, errOut := fsd(t, "eval", suite, "--runs-dir", runs, "--replay", cas)
	if code != exitOK || replayed != recorded {
		t.Fatalf("replay: exit %d (%s); report\n%s\nwant the recorded one\n%s", code, errOut, replayed, recorded)
	}
	write(t, filepath.Join(dir, "skills/report/report.skill.yaml"),
		"id: report\nname: Report\ndescription: Writes the monthly status report.\nversion: 1.0.0\ninstructions: Report.\n")
	code, _, errOut = fsd(t, "eval", suite, "--runs-dir", runs, "--replay", cas)
	if code != exitProblems || !strings.Contains(errOut, "replay diverged from the cassette") {
		t.Errorf("replay of a changed request: exit %d, stderr %q; want 1 and the divergence", code, errOut)
	}
}

// --format junit writes what CI systems read: checked against the rules
// of Jenkins' xunit plugin's junit-10.xsd (jenkinsci/xunit-plugin,
// src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd
// at 031e285), the Surefire-compatible schema, by checkJUnit below.
func TestEvalJUnit(t *testing.T) {
	dir := evalProject(t)
	code, out, _ := fsd(t, "eval", filepath.Join(dir, "t.eval.yaml"), "--model", "standin", "--runs-dir", filepath.Join(dir, ".fsd", "runs"),
		"--threshold", "0.7", "--format", "junit")
	if code != exitProblems {
		t.Errorf("exit %d, want 1", code)
	}
	if err := checkJUnit(strings.NewReader(out)); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{`<testsuite name="triggers" tests="4" failures="1" errors="0"`, `<failure message="trigger case greeter/2: skill greeter read in 0.67 (2/3) runs; want at least 0.70" type="trigger">`} {
		if !strings.Contains(out, want) {
			t.Errorf("junit lacks %s:\n%s", want, out)
		}
	}
	// The checker finds what the schema forbids.
	for _, bad := range []string{
		`<testsuites><testsuite tests="1" failures="0" errors="0"></testsuite></testsuites>`,
		`<testsuites><testsuite name="a" tests="1" failures="0" errors="0" time="1s"></testsuite></testsuites>`,
		`<testsuites><testsuite name="a" tests="1" failures="0" errors="0"><testcase/></testsuite></testsuites>`,
		`<testsuites><testcase name="x"/></testsuites>`,
	} {
		if checkJUnit(strings.NewReader(bad)) == nil {
			t.Errorf("checkJUnit accepts %s", bad)
		}
	}
}

// junitRule is one element of junit-10.xsd: the attributes it must
// have, those it may have, and the elements it may hold.
type junitRule struct {
	required, optional, children []string
	text                         bool // mixed content
}

var junitRules = map[string]junitRule{
	"testsuites": {optional: []string{"name", "time", "tests", "failures", "errors"}, children: []string{"testsuite"}},
	"testsuite": {required: []string{"name", "tests", "failures", "errors"},
		optional: []string{"group", "time", "skipped", "timestamp", "hostname", "id", "package", "file", "log", "url"},
		children: []string{"testsuite", "properties", "testcase", "system-out", "system-err"}},
	"testcase": {required: []string{"name"}, optional: []string{"time", "classname", "group"},
		children: []string{"skipped", "error", "failure", "rerunFailure", "rerunError", "flakyFailure", "flakyError", "system-out", "system-err"}},
	"failure":    {optional: []string{"type", "message"}, text: true},
	"error":      {optional: []string{"type", "message"}, text: true},
	"skipped":    {optional: []string{"type", "message"}, text: true},
	"properties": {children: []string{"property"}},
	"property":   {required: []string{"name", "value"}},
	"system-out": {text: true},
	"system-err": {text: true},
}

// surefireTime is junit-10.xsd's SUREFIRE_TIME pattern, anchored as XSD
// patterns are.
var surefireTime = regexp.MustCompile(`^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?$`)

// checkJUnit validates a document against junitRules: the root is
// testsuites, each element's attributes and children are the schema's,
// times match SUREFIRE_TIME, and a suite's counts are its test cases'.
func checkJUnit(r io.Reader) error {
	dec := xml.NewDecoder(r)
	type open struct {
		name              string
		cases, fails, err int
		attrs             map[string]string
	}
	var stack []*open
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch el := tok.(type) {
		case xml.StartElement:
			name := el.Name.Local
			rule, ok := junitRules[name]
			if !ok {
				return fmt.Errorf("unknown element <%s>", name)
			}
			if len(stack) == 0 {
				if root != "" || name != "testsuites" {
					return fmt.Errorf("the root is <%s>; want one <testsuites>", name)
				}
				root = name
			} else if parent := stack[len(stack)-1]; !containsStr(junitRules[parent.name].children, name) {
				return fmt.Errorf("<%s> may not hold <%s>", parent.name, name)
			}
			attrs := map[string]string{}
			for _, a := range el.Attr {
				if !containsStr(rule.required, a.Name.Local) && !containsStr(rule.optional, a.Name.Local) {
					return fmt.Errorf("<%s> has no attribute %s", name, a.Name.Local)
				}
				attrs[a.Name.Local] = a.Value
			}
			for _, req := range rule.required {
				if _, ok := attrs[req]; !ok {
					return fmt.Errorf("<%s> lacks the required attribute %s", name, req)
				}
			}
			if tm, ok := attrs["time"]; ok && name != "testcase" && !surefireTime.MatchString(tm) {
				return fmt.Errorf("<%s time=%q> is not a SUREFIRE_TIME", name, tm)
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				switch name {
				case "testcase":
					p.cases++
				case "failure":
					stack[len(stack)-2].fails++
				case "error":
					stack[len(stack)-2].err++
				}
			}
			stack = append(stack, &open{name: name, attrs: attrs})
		case xml.EndElement:
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top.name == "testsuite" {
				for k, n := range map[string]int{"tests": top.cases, "failures": top.fails, "errors": top.err} {
					if got, err := strconv.Atoi(top.attrs[k]); err != nil || got != n {
						return fmt.Errorf("testsuite %s: %s=%q, but it holds %d", top.attrs["name"], k, top.attrs[k], n)
					}
				}
			}
		case xml.CharData:
			if len(stack) > 0 && !junitRules[stack[len(stack)-1].name].text && strings.TrimSpace(string(el)) != "" {
				return fmt.Errorf("<%s> holds text", stack[len(stack)-1].name)
			}
		}
	}
	if root == "" {
		return errors.New("no <testsuites>")
	}
	return nil
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// --vary runs the cases again with greeter's description cut to a
// sentence that misses "welcome Grace aboard": greeter's recall falls
// from 5/6 to 3/6, beside the report in text, JSON and HTML, and the
// exit status stays the report's.
func TestEvalVary(t *testing.T) {
	t.Parallel()
	dir := evalProject(t)
	suite := filepath.Join(dir, "t.eval.yaml")
	alt := filepath.Join(dir, "alt.txt")
	write(t, alt, "Greets people by name when asked to say hello.\n")
	page := filepath.Join(dir, "out", "eval.html")
	args := []string{"eval", suite, "--model", "standin", "--runs-dir", filepath.Join(dir, ".fsd", "runs"), "--vary", "greeter.description=" + alt}
	code, out, errOut := fsd(t, append(args, "-o", page)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "Variant: greeter's description from "+alt) ||
		!regexp.MustCompile(`greeter +1\.00 +1\.00 +0\.83 +0\.50`).MatchString(out) ||
		!strings.Contains(out, `WORSE trigger greeter "welcome Grace aboard" rate: 0.67 -> 0.00`) {
		t.Errorf("text report lacks the variant:\n%s", out)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if html := string(data); !strings.Contains(html, `<section class="variant" data-skill="greeter">`) || !strings.Contains(html, "Greets people by name when asked to say hello.") {
		t.Errorf("the HTML page lacks the variant")
	}

	code, out, errOut = fsd(t, append(args, "--format", "json")...)
	var rep eval.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK {
		t.Fatalf("--format json: exit %d, %v; %s", code, err, errOut)
	}
	if len(rep.Variants) != 1 || rep.Variants[0].Skill != "greeter" || rep.Variants[0].Report == nil {
		t.Fatalf("variants: %+v", rep.Variants)
	}
	recall := func(r *eval.Report) string {
		for _, s := range r.Skills {
			if s.Skill == "greeter" && s.Recall != nil {
				return fmt.Sprintf("%.4f", *s.Recall)
			}
		}
		return "none"
	}
	if got, varied := recall(&rep), recall(rep.Variants[0].Report); got != "0.8333" || varied != "0.5000" {
		t.Errorf("greeter's recall %s, with the variant %s; want 0.8333 and 0.5000", got, varied)
	}
	if b := rep.Variants[0].Report.Baseline; b == nil || b.Worse != 2 {
		t.Errorf("the variant's comparison with the report: %+v, want 2 worse", b)
	}

	for _, bad := range []string{"greeter.name=" + alt, "nobody.description=" + alt, "description=" + alt, "greeter.description=" + filepath.Join(dir, "missing.txt")} {
		if code, _, errOut := fsd(t, "eval", suite, "--model", "standin", "--vary", bad); code != exitUsage || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("--vary %s: exit %d, stderr %q; want 2 and one line", bad, code, errOut)
		}
	}
}
