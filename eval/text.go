package eval

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fsdrun/fsd/diag"
)

// WriteText writes the report for a person: each trigger query and case
// with its mark, the skills' statistics, the confusion table, the
// failures' reasons, the baseline's deltas and a total line.
func (r *Report) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	if len(r.Triggers) > 0 {
		var runs []int
		var ths []float64
		for _, t := range r.Triggers {
			runs, ths = append(runs, len(t.Runs)), append(ths, t.Threshold)
		}
		fmt.Fprintf(b, "Trigger cases (%s)\n", each(runs, ths))
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		for _, t := range r.Triggers {
			want := "should trigger"
			if !t.ShouldTrigger {
				want = "should not"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", mark(t.Passed), t.ID, rate(t.Rate, t.Runs), want, readsOf(t), clipQuery(t.Query))
		}
		tw.Flush()
		b.WriteString("\nSkills\n")
		tw = tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  skill\tqueries passed\tprecision\trecall\ttrue pos.\tfalse pos.\tfalse neg.\n")
		for _, s := range r.Skills {
			fmt.Fprintf(tw, "  %s\t%d/%d\t%s\t%s\t%d\t%d\t%d\n", s.Skill, s.Passed, s.Queries, optNum(s.Precision), optNum(s.Recall),
				s.TruePositives, s.FalsePositives, s.FalseNegatives)
		}
		tw.Flush()
		b.WriteString("\nConfusion (runs of each skill's queries, by the skill they read)\n")
		tw = tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		for _, row := range confusionRows(r.Confusion) {
			fmt.Fprintf(tw, "  %s\t%s\n", row.label, row.cells)
		}
		tw.Flush()
	}
	if len(r.Cases) > 0 {
		if len(r.Triggers) > 0 {
			b.WriteString("\n")
		}
		var runs []int
		var ths []float64
		for _, c := range r.Cases {
			runs, ths = append(runs, len(c.Runs)), append(ths, c.Threshold)
		}
		fmt.Fprintf(b, "Outcome cases (%s)\n", each(runs, ths))
		for _, c := range r.Cases {
			passed := 0
			for _, run := range c.Runs {
				if run.Passed {
					passed++
				}
			}
			fmt.Fprintf(b, "  %s %s  %d/%d runs passed\n", mark(c.Passed), c.ID, passed, len(c.Runs))
			for _, run := range c.Runs {
				for _, why := range failures(run) {
					fmt.Fprintf(b, "       run %d: %s\n", run.Repeat+1, why)
				}
			}
		}
	}
	for _, t := range r.Triggers {
		for _, run := range t.Runs {
			if run.Error != "" {
				fmt.Fprintf(b, "  %s run %d failed: %s\n", t.ID, run.Repeat+1, firstLine(run.Error))
			}
		}
	}
	if c := r.Baseline; c != nil {
		fmt.Fprintf(b, "\nCompared with %s: %d changed, %d worse\n", c.File, len(c.Deltas), c.Worse)
		writeDeltas(b, c)
	}
	t := r.Totals
	runs := "runs"
	if t.Runs == 1 {
		runs = "run"
	}
	fmt.Fprintf(b, "\n%d/%d trigger queries passed, %d/%d cases passed; %d %s, %d tokens",
		t.TriggersPassed, t.Triggers, t.CasesPassed, t.Cases, t.Runs, runs, t.Usage.InputTokens+t.Usage.OutputTokens)
	if t.Usage.Estimated {
		b.WriteString(" (estimated)")
	}
	if t.Cost > 0 {
		fmt.Fprintf(b, ", cost %s", strconv.FormatFloat(t.Cost, 'f', 4, 64))
	}
	b.WriteString("\n")
	for _, v := range r.Variants {
		writeVariant(b, r, v)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeDeltas(b *strings.Builder, c *Comparison) {
	for _, d := range c.Deltas {
		tag := "      "
		if d.Worse {
			tag = "WORSE "
		}
		fmt.Fprintf(b, "  %s%s %s %s: %s -> %s\n", tag, d.Kind, d.ID, d.Metric, optNum(d.Before), optNum(d.After))
	}
}

// writeVariant sets a --vary variant beside the report: each skill's
// precision and recall in both, then every number that moved.
func writeVariant(b *strings.Builder, r *Report, v Variant) {
	fmt.Fprintf(b, "\nVariant: %s's description from %s\n", v.Skill, v.File)
	if v.Report == nil {
		return
	}
	alt := map[string]SkillStats{}
	for _, s := range v.Report.Skills {
		alt[s.Skill] = s
	}
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  skill	precision	variant	recall	variant\n")
	for _, s := range r.Skills {
		a := alt[s.Skill]
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", s.Skill, optNum(s.Precision), optNum(a.Precision), optNum(s.Recall), optNum(a.Recall))
	}
	tw.Flush()
	t := v.Report.Totals
	fmt.Fprintf(b, "  %d/%d trigger queries passed, %d/%d cases passed with it\n", t.TriggersPassed, t.Triggers, t.CasesPassed, t.Cases)
	if c := v.Report.Baseline; c != nil {
		writeDeltas(b, c)
	}
}

// Failures are the report's failing cases as diagnostics at the place
// each is written, for annotations (--format github).
func (r *Report) Failures() diag.List {
	var out diag.List
	for _, t := range r.Triggers {
		if t.Passed {
			continue
		}
		want := "at least"
		if !t.ShouldTrigger {
			want = "below"
		}
		out = append(out, diag.Errorf(t.At, "eval", "trigger case %s: skill %s read in %s runs; want %s %s",
			t.ID, t.Skill, rate(t.Rate, t.Runs), want, num(t.Threshold)))
	}
	for _, c := range r.Cases {
		if c.Passed {
			continue
		}
		why := ""
		for _, run := range c.Runs {
			if f := failures(run); len(f) > 0 {
				why = fmt.Sprintf(" (run %d: %s)", run.Repeat+1, f[0])
				break
			}
		}
		out = append(out, diag.Errorf(c.At, "eval", "case %s: %s of its runs passed%s", c.ID, num(c.PassRate), why))
	}
	return out
}

// each says how many runs each case had and the threshold it was held
// to: one figure when the cases agree, else the range, since each suite
// may set its own repeat: and threshold: (the first suite's stood for
// all, and a failure read "0.50 ... want at least 0.20").
func each(runs []int, ths []float64) string {
	lo, hi := slices.Min(runs), slices.Max(runs)
	n := strconv.Itoa(lo)
	if hi != lo {
		n += " to " + strconv.Itoa(hi)
	}
	word := "runs"
	if hi == 1 {
		word = "run"
	}
	th := num(slices.Min(ths))
	if top := num(slices.Max(ths)); top != th {
		th += " to " + top
	}
	return fmt.Sprintf("%s %s each, threshold %s", n, word, th)
}

// failures are why a run failed, one line each.
func failures(run RunResult) []string {
	var out []string
	if run.Error != "" {
		out = append(out, "the run failed: "+firstLine(run.Error))
	}
	for _, a := range run.Assertions {
		if !a.Passed {
			out = append(out, a.Assertion+": "+firstLine(a.Evidence))
		}
	}
	return out
}

type confusionRow struct{ label, cells string }

// confusionRows lays the confusion cells out one row per skill and
// polarity: "greeter (should trigger)  greeter 5, weekly-report 1".
func confusionRows(cells []Confusion) []confusionRow {
	var rows []confusionRow
	for i := 0; i < len(cells); {
		j := i
		var parts []string
		for ; j < len(cells) && cells[j].Skill == cells[i].Skill && cells[j].ShouldTrigger == cells[i].ShouldTrigger; j++ {
			read := cells[j].Read
			if read == "" {
				read = "(none)"
			}
			parts = append(parts, fmt.Sprintf("%s %d", read, cells[j].Runs))
		}
		want := "should trigger"
		if !cells[i].ShouldTrigger {
			want = "should not"
		}
		rows = append(rows, confusionRow{fmt.Sprintf("%s (%s)", cells[i].Skill, want), strings.Join(parts, ", ")})
		i = j
	}
	return rows
}

func readsOf(t TriggerResult) string {
	n := map[string]int{}
	for _, r := range t.Runs {
		seen := map[string]bool{}
		for _, id := range r.Reads {
			if !seen[id] {
				seen[id] = true
				n[id]++
			}
		}
	}
	var ids []string
	for id := range n {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("%s×%d", id, n[id]))
	}
	if len(parts) == 0 {
		return "read nothing"
	}
	return "read " + strings.Join(parts, " ")
}

func mark(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func rate(r float64, runs []RunResult) string {
	return fmt.Sprintf("%s (%d/%d)", num(r), int(r*float64(len(runs))+0.5), len(runs))
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

func optNum(f *float64) string {
	if f == nil {
		return "-"
	}
	return num(*f)
}

func clipQuery(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if r := []rune(q); len(r) > 60 {
		q = string(r[:59]) + "…"
	}
	return strconv.Quote(q)
}
