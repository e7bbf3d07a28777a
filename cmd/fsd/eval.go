package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/fsdrun/fsd/approval"
	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/engine"
	"github.com/fsdrun/fsd/eval"
	"github.com/fsdrun/fsd/model"
	"github.com/fsdrun/fsd/model/provider"
	"github.com/fsdrun/fsd/model/standin"
	"github.com/fsdrun/fsd/spec"
)

// evalFormats are the output formats of `fsd eval`.
var evalFormats = []string{"text", "json", "junit", "github"}

type evalFlags struct {
	model       string
	repeat      int
	concurrency int
	threshold   float64
	steps       int
	format      string
	baseline    string
	record      string
	replay      string
	workflow    string
	skill       string
	runsDir     string
	approve     string
	trust       []string
	output      string
	vary        []string
}

func newEvalCmd() *cobra.Command {
	var f evalFlags
	cmd := &cobra.Command{
		Use:   "eval PATH...",
		Short: "Measure skills: does the host read them when it should, do runs answer right",
		Long: `Run eval suites: *.eval.yaml files (or folders holding them), skill-creator
trigger sets (a JSON array of {"query", "should_trigger"}) and skill-creator
evals/evals.json files. Every case runs --repeat times, each a normal run
with a record (fsd show RUN-ID). A trigger case passes when its query's read
rate is at or above --threshold (should trigger) or below it (should not); an
outcome case when that share of its runs pass every assertion.

A JSON file runs against --workflow (default: the one workflow under the
current folder); a trigger set's skill is --skill, else the skill whose
folder holds the file.

Exit status: 0 every case passed, 1 a case is below the threshold or a run
failed (a replayed request that differs from the cassette included),
2 bad usage, 130 Ctrl-C (no report; 143 SIGTERM, 129 SIGHUP).`,
		Example: `  fsd eval evals/ --model anthropic/claude-sonnet-4-5
  fsd eval greeter.triggers.json --skill greeter --workflow hello.workflow.yaml
  fsd eval evals/ --model standin --format junit > eval.xml
  fsd eval evals/ --record cassettes/     # then, in CI, offline and free:
  fsd eval evals/ --replay cassettes/ --format github
  fsd eval evals/ --format json > now.json && fsd eval evals/ --baseline now.json
  fsd eval evals/ --baseline now.json -o eval.html
  fsd eval evals/ --vary greeter.description=short.txt`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEval(cmd, args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.model, "model", "", "model for every generator and the judge: standin (offline, deterministic), scripted, openai/<model>, anthropic/<model>")
	_ = cmd.RegisterFlagCompletionFunc("model", completeModels)
	fl.IntVar(&f.repeat, "repeat", 0, fmt.Sprintf("runs of each case (default: the suite's repeat:, else %d)", spec.DefaultEvalRepeat))
	fl.IntVar(&f.concurrency, "concurrency", 1, "runs at once")
	fl.Float64Var(&f.threshold, "threshold", 0, fmt.Sprintf("the read rate a trigger case and the pass rate an outcome case need (default: the suite's threshold:, else %g)", spec.DefaultEvalThreshold))
	fl.IntVar(&f.steps, "steps", 0, "host steps a trigger case watches for reads (default: the suite's steps:, else until the first action that is not a read)")
	fl.StringVar(&f.format, "format", "text", "output format: "+strings.Join(evalFormats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(evalFormats, cobra.ShellCompDirectiveNoFileComp))
	fl.StringVar(&f.baseline, "baseline", "", "compare with the report `FILE` an earlier fsd eval --format json wrote: per-case deltas, losses marked")
	fl.StringVar(&f.record, "record", "", "save each run's model exchanges to a cassette in `DIR`, one per case and repeat, for --replay")
	fl.StringVar(&f.replay, "replay", "", "answer each run from its cassette in `DIR` (made with --record): offline, deterministic; a request that differs fails the run")
	fl.StringVar(&f.workflow, "workflow", "", "the workflow `FILE` JSON suites run against (default: the one workflow under the current folder)")
	fl.StringVar(&f.skill, "skill", "", "the skill `ID` a JSON trigger set is for (default: the skill whose folder holds the file)")
	fl.StringVar(&f.runsDir, "runs-dir", "", runsDirRunUsage)
	fl.StringVar(&f.approve, "approve", "deny", "who answers calls that need approval: deny or auto (an eval asks no one)")
	fl.StringVarP(&f.output, "output", "o", "", "also write the report as one self-contained HTML page to `FILE` (- : to stdout, instead of --format)")
	fl.StringArrayVar(&f.vary, "vary", nil, "run the cases again with a skill's description replaced, beside the report: `SPEC` is SKILL.description=FILE, or description=FILE for --skill or the one skill the trigger cases test (repeatable: one variant each)")
	fl.StringArrayVar(&f.trust, "trust", nil, "also let skills under DIR run command tools (repeatable; the workflow's folder is always trusted)")
	return cmd
}

// runEval writes the report, then exits 1 when a case is below its
// threshold or a run failed (V7).
func runEval(cmd *cobra.Command, args []string, f evalFlags) error {
	if !contains(evalFormats, f.format) {
		return usage("unknown --format %q; want %s", f.format, strings.Join(evalFormats, ", "))
	}
	switch {
	case f.record != "" && f.replay != "":
		return usage("--record and --replay cannot be used together")
	case cmd.Flags().Changed("repeat") && f.repeat < 1:
		return usage("--repeat %d: want at least 1 run of each case", f.repeat)
	case f.repeat > maxEvalRepeat:
		// The report holds a slot per run before the first starts: an
		// unbounded --repeat ran fsd out of memory with a stack trace.
		return usage("--repeat %d: want at most %d runs of each case, as a suite's repeat:", f.repeat, maxEvalRepeat)
	case f.concurrency < 1 || f.steps < 0:
		return usage("--steps must not be negative, --concurrency at least 1")
	case cmd.Flags().Changed("threshold") && !(f.threshold >= 0 && f.threshold <= 1): // NaN fails both
		return usage("--threshold %g: want a share from 0 to 1", f.threshold)
	case f.approve != string(approval.Deny) && f.approve != string(approval.Auto):
		return usage("unknown --approve %q; want deny or auto", f.approve)
	}
	if f.output != "" && f.output != "-" {
		// Refused before the runs, not after them.
		if st, err := os.Stat(f.output); err == nil && st.IsDir() {
			return usage("-o %s: a folder; name the page's file, e.g. %s", f.output, filepath.Join(f.output, "eval.html"))
		}
	}
	if f.replay != "" {
		if st, err := os.Stat(f.replay); err != nil || !st.IsDir() {
			return usage("--replay %s: not a folder of cassettes made with --record", f.replay)
		}
	}
	if f.record != "" {
		if err := os.MkdirAll(f.record, 0o755); err != nil {
			return usage("--record: %v", err)
		}
	}
	var base *eval.Report
	if f.baseline != "" {
		b, err := eval.ReadReport(f.baseline)
		if err != nil {
			return usage("--baseline: %v", err)
		}
		base = b
	}
	suites, err := loadSuites(args, f)
	if err != nil {
		return err
	}
	if n := measures(suites); n == 0 {
		// A suite emptied by mistake must not pass a CI gate as a success.
		verb := "hold"
		if len(args) == 1 {
			verb = "holds"
		}
		return fail(exitProblems, "nothing to measure: %s %s no trigger queries and no cases", strings.Join(args, ", "), verb)
	}
	variants, err := parseVary(f, suites)
	if err != nil {
		return err
	}
	for _, s := range suites {
		if s.Judge != "" && s.Judge != standin.Name && f.model == "" && f.replay == "" {
			if err := provider.Check(s.Judge, os.Getenv); err != nil {
				return fail(exitProblems, "%s: judge: %v", s.File, err)
			}
		}
	}
	stderr := cmd.ErrOrStderr()
	opts := eval.Options{Repeat: f.repeat, Steps: f.steps, Concurrency: f.concurrency, Model: f.model, Start: evalStart(f, nil)}
	if cmd.Flags().Changed("threshold") {
		opts.Threshold = &f.threshold
	}
	bar := &progressBar{w: stderr}
	if isTerminal(stderr) {
		opts.Progress = bar.show
	}
	ctx, stop := withSignals(cmd.Context())
	defer stop()
	rep, err := eval.Run(ctx, suites, opts)
	bar.clear()
	if err != nil {
		return evalInterrupted(ctx, err)
	}
	if base != nil {
		eval.Compare(rep, base, f.baseline)
	}
	if err := runVariants(ctx, rep, suites, opts, f, variants, bar); err != nil {
		return evalInterrupted(ctx, err)
	}
	out := cmd.OutOrStdout()
	if f.output == "-" {
		if err := writeEvalHTML(cmd, rep, f.output); err != nil {
			return err
		}
	}
	switch {
	case f.output == "-":
		// The page took stdout's place.
	case f.format == "json":
		err = rep.WriteJSON(out)
	case f.format == "junit":
		err = rep.WriteJUnit(out)
	case f.format == "github":
		err = writeGitHub(out, rep.Failures())
		if err == nil && rep.Baseline != nil {
			for _, d := range rep.Baseline.Deltas {
				if d.Worse {
					fmt.Fprintf(out, "::warning title=fsd eval::%s\n", ghData(fmt.Sprintf("%s %s: %s went from %s to %s (baseline %s)",
						d.Kind, d.ID, d.Metric, deltaNum(d.Before), deltaNum(d.After), f.baseline)))
				}
			}
		}
	default:
		err = rep.WriteText(out)
	}
	if err != nil {
		return fail(exitInternal, "writing the report: %v", err)
	}
	// The page is written after stdout's report: a page that cannot be
	// written loses the eval's runs no more.
	if f.output != "" && f.output != "-" {
		if err := writeEvalHTML(cmd, rep, f.output); err != nil {
			return err
		}
	}
	if !rep.Passed {
		t := rep.Totals
		msg := fmt.Sprintf("below the threshold: %d/%d trigger queries and %d/%d cases passed", t.TriggersPassed, t.Triggers, t.CasesPassed, t.Cases)
		if e := firstRunError(rep); e != "" {
			msg += "; " + e
		}
		return fail(exitProblems, "%s", msg)
	}
	return nil
}

// maxEvalRepeat is the most runs of each case: eval.schema.json's
// maximum for a suite's repeat:, which --repeat keeps to as well.
const maxEvalRepeat = 100

// evalInterrupted is the error of an eval its context stopped: a signal
// exits 128+its number, as fsd run does (130 for Ctrl-C), and says that
// no report was written; the runs that ended keep their records.
func evalInterrupted(ctx context.Context, err error) error {
	if sig, ok := caughtSignal(ctx); ok {
		return fail(signalExit(sig), "eval interrupted (%s): no report; the finished runs' records are in fsd runs", signalName(sig))
	}
	return fail(exitProblems, "eval interrupted: %v", err)
}

func deltaNum(f *float64) string {
	if f == nil {
		return "none"
	}
	return fmt.Sprintf("%.2f", *f)
}

// firstRunError names the first run that could not run, for stderr's line.
func firstRunError(rep *eval.Report) string {
	for _, t := range rep.Triggers {
		for _, r := range t.Runs {
			if r.Error != "" {
				return fmt.Sprintf("trigger case %s run %d failed: %s", t.ID, r.Repeat+1, r.Error)
			}
		}
	}
	for _, c := range rep.Cases {
		for _, r := range c.Runs {
			if r.Error != "" {
				return fmt.Sprintf("case %s run %d failed: %s", c.ID, r.Repeat+1, r.Error)
			}
		}
	}
	return ""
}

// evalStart builds each job's run as fsd run would, with the job's
// cassette when recording or replaying, and the stand-in seeded by the
// job's repeat: one cassette per case and repeat, the judge's calls in it
// too (V6).
func evalStart(f evalFlags, v *variant) eval.Start {
	return func(ctx context.Context, j eval.Job, opts engine.Options, wrap func(model.Model) model.Model) (*engine.Run, func(error) error, error) {
		path := j.Suite.WorkflowPath()
		rf := runFlags{model: f.model, trust: f.trust, wrap: wrap, seed: j.Repeat}
		name := j.Name() + ".jsonl"
		if v != nil {
			rf.edit = v.apply
			name = filepath.Join(v.dir, name)
		}
		if f.record != "" {
			rf.cassette = filepath.Join(f.record, name)
			if err := os.MkdirAll(filepath.Dir(rf.cassette), 0o755); err != nil {
				return nil, nil, err
			}
		}
		if f.replay != "" {
			rf.replay = filepath.Join(f.replay, name)
		}
		opts.RunsDir = runsDirOr(f.runsDir, filepath.Dir(path))
		opts.Logger = zerolog.Nop()
		opts.Approve = approval.Mode(f.approve)
		opts.Meta = map[string]string{"model": f.model, "eval": j.Name()}
		pr, err := prepare(path, rf, opts, nil)
		if err != nil {
			return nil, nil, err
		}
		finish := pr.finish
		if rf.cassette != "" {
			finish = func(runErr error) error {
				err := pr.finish(runErr)
				if ctx.Err() != nil {
					// Interrupted: the cassette stops mid-run, and a
					// replay of it read as a divergence, not as a cut
					// recording. None is better: replay says it is missing.
					os.Remove(rf.cassette)
				}
				return err
			}
		}
		return pr.run, finish, nil
	}
}

// loadSuites reads the PATH arguments: *.eval.yaml files, folders of
// them, and skill-creator JSON files run against --workflow.
func loadSuites(args []string, f evalFlags) ([]*spec.EvalSuite, error) {
	var suites []*spec.EvalSuite
	// A case id names the case in the report, in --baseline and in its
	// cassettes' names: two suites sharing one overwrote each other's
	// cassettes, so the second is refused where it is (as in one suite).
	seen := map[string]diag.Pos{}
	loaded := map[string]bool{} // a file named twice (a folder and a file in it) is read once
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, usage("%s: %s", a, fsMessage(err))
		}
		var files []string
		if st.IsDir() {
			_ = filepath.WalkDir(a, func(p string, e fs.DirEntry, err error) error {
				if err == nil && e.IsDir() && p != a && strings.HasPrefix(e.Name(), ".") {
					return filepath.SkipDir
				}
				if err == nil && !e.IsDir() && spec.IsEvalFile(p) {
					files = append(files, p)
				}
				return nil
			})
			if len(files) == 0 {
				return nil, usage("%s holds no eval suite (*.eval.yaml); name one, or a skill-creator JSON file", a)
			}
		} else {
			files = []string{a}
		}
		for _, file := range files {
			if abs, err := filepath.Abs(file); err == nil {
				if loaded[abs] {
					continue
				}
				loaded[abs] = true
			}
			s, err := loadSuite(file, f)
			if err != nil {
				return nil, err
			}
			for _, c := range s.Cases {
				if prev, dup := seen[c.ID]; dup {
					return nil, fail(exitProblems, "%s: case id %q is used twice (first at %s)", c.Pos, c.ID, prev)
				}
				seen[c.ID] = c.Pos
			}
			suites = append(suites, s)
		}
	}
	return suites, nil
}

func loadSuite(file string, f evalFlags) (*spec.EvalSuite, error) {
	if spec.IsEvalFile(file) {
		s, diags := spec.LoadEval(file)
		if errs := diags.Errors(false); len(errs) > 0 {
			first := errs[0].String()
			if len(errs) > 1 {
				first += fmt.Sprintf(" (and %s; run fsd validate %s)", plural(len(errs)-1, "more problem"), file)
			}
			return nil, fail(exitProblems, "%s", first)
		}
		return s, nil
	}
	if filepath.Ext(file) != ".json" {
		return nil, usage("%s: not an eval suite; fsd eval reads *.eval.yaml files and skill-creator's JSON (a trigger set, an evals.json)", file)
	}
	wf, err := workflowArg(orDot(f.workflow))
	if err != nil {
		return nil, err
	}
	// Absolute: a suite's workflow: is relative to the suite's file, a
	// --workflow to the current folder.
	abs, err := filepath.Abs(wf)
	if err != nil {
		return nil, usage("--workflow: %v", err)
	}
	s := &spec.EvalSuite{File: file, Workflow: abs}
	var diags interface{ Err() error }
	if isTriggerSet(file) {
		skill := f.skill
		if skill == "" {
			if skill, err = skillOf(file, wf); err != nil {
				return nil, err
			}
		}
		ts, d := spec.LoadTriggerSet(file, skill)
		s.Triggers, diags = ts, d
		if f.skill != "" && d.Err() == nil {
			if bad := spec.CheckEvalSkills(s); len(bad) > 0 {
				msg := bad[0].Message
				if bad[0].Hint != "" {
					msg += "; " + bad[0].Hint
				}
				return nil, usage("--skill %s: %s", f.skill, msg)
			}
		}
	} else {
		cs, d := spec.LoadSkillCreatorEvals(file)
		s.Cases, diags = cs, d
	}
	if err := diags.Err(); err != nil {
		return nil, fail(exitProblems, "%s", oneLine(err.Error()))
	}
	return s, nil
}

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

// isTriggerSet tells a trigger set (a JSON array) from an evals.json (an
// object) by its first character.
func isTriggerSet(file string) bool {
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // editors on Windows save one
	var v any
	if json.Unmarshal(data, &v) != nil {
		return strings.HasPrefix(strings.TrimSpace(string(data)), "[")
	}
	_, list := v.([]any)
	return list
}

// skillOf is the workflow's skill whose folder holds file.
func skillOf(file, workflow string) (string, error) {
	p, _ := spec.LoadProjectLenient(workflow)
	abs, _ := filepath.Abs(file)
	if p != nil {
		for _, s := range p.Skills {
			dir, _ := filepath.Abs(s.Dir)
			if strings.HasPrefix(abs, dir+string(filepath.Separator)) {
				return s.ID, nil
			}
		}
	}
	return "", usage("%s is in no skill folder of %s; name its skill with --skill ID", file, workflow)
}

// measures counts the trigger queries and cases of suites.
func measures(suites []*spec.EvalSuite) int {
	n := 0
	for _, s := range suites {
		n += len(s.Triggers) + len(s.Cases)
	}
	return n
}

// progressBar draws the eval's progress on a terminal, in place.
type progressBar struct {
	w     io.Writer
	drawn bool
}

func (b *progressBar) show(done, total int) {
	const width = 30
	n := width * done / max(total, 1)
	fmt.Fprintf(b.w, "\r[%s%s] %d/%d runs", strings.Repeat("#", n), strings.Repeat(" ", width-n), done, total)
	b.drawn = true
}

func (b *progressBar) clear() {
	if b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
		b.drawn = false
	}
}
