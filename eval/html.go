package eval

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/fsdrun/fsd/internal/redact"
)

// assets hold the page's template, styles included: the page fetches
// nothing.
//
//go:embed assets
var assets embed.FS

// htmlTmpl is parsed at the first report, not at start: every fsd command
// would pay for it.
var htmlTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report.html").Funcs(template.FuncMap{
		"num":    func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
		"opt":    dashNum,
		"cost":   func(f float64) string { return strconv.FormatFloat(f, 'f', 4, 64) },
		"plus1":  func(i int) int { return i + 1 },
		"tokens": func(in, out int) int { return in + out },
		"runs":   func(r float64, n int) int { return int(r*float64(n) + 0.5) },
		"pct":    func(f float64) string { return strconv.FormatFloat(f*100, 'f', 0, 64) },
		"record": recordURL,
	}).ParseFS(assets, "assets/report.html"))
})

// WriteHTML writes the report (fsd eval -o FILE.html) as one
// self-contained HTML page, as fsd report writes a run's: the trigger
// queries with each repeat's reads, the skills' precision and recall, the
// confusion table, the outcome cases' pass/fail matrix, cost and tokens,
// the baseline's deltas and every --vary variant beside the report. It is
// drawn from the report alone, with no script and nothing fetched;
// secrets are masked in every byte (V11).
func (r *Report) WriteHTML(w io.Writer, secrets []string) error {
	var buf bytes.Buffer
	if err := htmlTmpl().Execute(&buf, struct{ R htmlView }{viewHTML(r)}); err != nil {
		return err
	}
	_, err := w.Write(redact.New(secrets...).Bytes(buf.Bytes()))
	return err
}

// htmlView is rep with what a template cannot compute: the confusion
// table as a grid, and each variant's numbers beside the report's.
type htmlView struct {
	*Report
	Runs      []int  // repeat numbers, the matrix's columns
	Each      string // runs each and threshold, over every suite's cases
	ConfCols  []string
	ConfRows  []confRow
	Worse     map[string]bool // "skill/recall" → lost against the baseline
	Variants  []variantView
	InTokens  int
	OutTokens int
}

type confRow struct {
	Skill         string
	ShouldTrigger bool
	Cells         []int
}

type variantView struct {
	Variant
	Skills   []pairRow
	Triggers []pairRow
}

// pairRow is one number of the report and of a variant, side by side.
type pairRow struct {
	ID, Metric    string
	Before, After *float64
	Worse, Better bool
}

func viewHTML(rep *Report) htmlView {
	v := htmlView{Report: rep, Worse: map[string]bool{}, InTokens: rep.Totals.Usage.InputTokens, OutTokens: rep.Totals.Usage.OutputTokens}
	// A column per repeat of the case that ran most: suites may set
	// their own repeat:, and rep.Repeat is the first one's.
	most := rep.Repeat
	runs, ths := []int{rep.Repeat}, []float64{rep.Totals.Threshold}
	if len(rep.Triggers)+len(rep.Cases) > 0 {
		runs, ths = nil, nil
	}
	for _, t := range rep.Triggers {
		most = max(most, len(t.Runs))
		runs, ths = append(runs, len(t.Runs)), append(ths, t.Threshold)
	}
	for _, c := range rep.Cases {
		most = max(most, len(c.Runs))
		runs, ths = append(runs, len(c.Runs)), append(ths, c.Threshold)
	}
	for i := range most {
		v.Runs = append(v.Runs, i+1)
	}
	v.Each = each(runs, ths)
	cols := map[string]bool{}
	for _, c := range rep.Confusion {
		cols[c.Read] = true
	}
	for c := range cols {
		v.ConfCols = append(v.ConfCols, c)
	}
	// The skills in order, "read nothing" last.
	sort.Slice(v.ConfCols, func(i, j int) bool {
		a, b := v.ConfCols[i], v.ConfCols[j]
		return a != "" && (b == "" || a < b)
	})
	for _, c := range rep.Confusion {
		n := len(v.ConfRows)
		if n == 0 || v.ConfRows[n-1].Skill != c.Skill || v.ConfRows[n-1].ShouldTrigger != c.ShouldTrigger {
			v.ConfRows = append(v.ConfRows, confRow{Skill: c.Skill, ShouldTrigger: c.ShouldTrigger, Cells: make([]int, len(v.ConfCols))})
			n++
		}
		for i, col := range v.ConfCols {
			if col == c.Read {
				v.ConfRows[n-1].Cells[i] += c.Runs
			}
		}
	}
	if rep.Baseline != nil {
		for _, d := range rep.Baseline.Deltas {
			if d.Worse && d.Kind == "skill" {
				v.Worse[d.ID+"/"+d.Metric] = true
			}
		}
	}
	for _, va := range rep.Variants {
		vv := variantView{Variant: va}
		if va.Report != nil {
			vv.Skills, vv.Triggers = pairs(rep, va.Report)
		}
		v.Variants = append(v.Variants, vv)
	}
	return v
}

// pairs sets a variant's skills and trigger queries beside the report's.
func pairs(rep, alt *Report) (skills, triggers []pairRow) {
	pair := func(id, metric string, before, after *float64, higherIsBetter bool) pairRow {
		p := pairRow{ID: id, Metric: metric, Before: before, After: after}
		if before != nil && after != nil && *before != *after {
			up := *after > *before
			p.Better, p.Worse = up == higherIsBetter, up != higherIsBetter
		}
		return p
	}
	altSkills := map[string]SkillStats{}
	for _, s := range alt.Skills {
		altSkills[s.Skill] = s
	}
	for _, s := range rep.Skills {
		a := altSkills[s.Skill]
		skills = append(skills, pair(s.Skill, "recall", s.Recall, a.Recall, true), pair(s.Skill, "precision", s.Precision, a.Precision, true))
	}
	type key struct{ skill, query string }
	altRates := map[key]float64{}
	for _, t := range alt.Triggers {
		altRates[key{t.Skill, t.Query}] = t.Rate
	}
	for _, t := range rep.Triggers {
		var after *float64
		if r, ok := altRates[key{t.Skill, t.Query}]; ok {
			after = &r
		}
		b := t.Rate
		p := pair(t.ID, fmt.Sprintf("%q", t.Query), &b, after, t.ShouldTrigger)
		triggers = append(triggers, p)
	}
	return skills, triggers
}

func dashNum(f *float64) string {
	if f == nil {
		return "–"
	}
	return strconv.FormatFloat(*f, 'f', 2, 64)
}

// recordURL links a run's record folder: a file URL when the path is
// absolute, else the path as given (relative to where fsd eval ran).
func recordURL(path string) template.URL {
	if filepath.IsAbs(path) {
		return template.URL((&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String())
	}
	return template.URL((&url.URL{Path: filepath.ToSlash(path)}).String())
}
