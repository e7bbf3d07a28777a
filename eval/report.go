package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/model"
)

// ReportVersion is the version of Report's JSON; a reader refuses a
// report of a version it does not know.
const ReportVersion = 1

// Report is one eval's result: what `fsd eval --format json` prints and
// `--baseline` reads. Every number in it is derived from Triggers and
// Cases, which keep each run.
type Report struct {
	Version int `json:"version"`
	// Suites are the files the cases came from; Workflow the workflow
	// they ran (each suite names its own; the first is shown).
	Suites   []string  `json:"suites"`
	Workflow string    `json:"workflow"`
	Model    string    `json:"model,omitempty"` // --model, when one was given
	Repeat   int       `json:"repeat"`
	Started  time.Time `json:"started"`
	// Elapsed is the eval's wall-clock time in milliseconds.
	Elapsed  float64         `json:"elapsed_ms"`
	Triggers []TriggerResult `json:"triggers"`
	// Skills are the trigger statistics per skill, by skill id.
	Skills []SkillStats `json:"skills"`
	// Confusion counts the runs of each skill's queries that read a skill:
	// its own or another (a false read), or none.
	Confusion []Confusion    `json:"confusion"`
	Cases     []CaseResult   `json:"cases"`
	Totals    Totals         `json:"totals"`
	Baseline  *Comparison    `json:"baseline,omitempty"`
	Passed    bool           `json:"passed"`
	Meta      map[string]any `json:"meta,omitempty"`
	// Variants are the same cases run again with one skill's description
	// replaced (--vary), each beside this report. They do not count
	// toward Passed.
	Variants []Variant `json:"variants,omitempty"`
}

// Variant is the eval run again with Skill's description replaced by
// the text of File. Its Report is a whole report of its own, whose
// Baseline is its comparison with the report it varies.
type Variant struct {
	Skill       string  `json:"skill"`
	File        string  `json:"file"`
	Description string  `json:"description"`
	Report      *Report `json:"report"`
}

// RunResult is one repeat of a case: one run of the workflow.
type RunResult struct {
	Repeat int `json:"repeat"`
	// RunID and Record are the run's id and record folder (fsd show
	// RUN-ID); empty when no record was kept.
	RunID  string `json:"run_id,omitempty"`
	Record string `json:"record,omitempty"`
	// Reads are the skills the run read, in order (a trigger case: those
	// of the steps it watched).
	Reads  []string    `json:"reads"`
	Answer string      `json:"answer,omitempty"`
	Error  string      `json:"error,omitempty"`
	Usage  model.Usage `json:"usage"`
	// Cost is the run's cost, its judge's included (0: no price known).
	Cost  float64 `json:"cost"`
	Steps int     `json:"steps"`
	// Elapsed is the run's wall-clock time in milliseconds, its judge's
	// included.
	Elapsed float64 `json:"elapsed_ms"`
	// Passed: a trigger case's run read the skill as it should; an
	// outcome case's run failed no assertion.
	Passed     bool              `json:"passed"`
	Assertions []AssertionResult `json:"assertions,omitempty"`
}

// AssertionResult is one assertion's verdict on one run.
type AssertionResult struct {
	Assertion string `json:"assertion"`
	Passed    bool   `json:"passed"`
	// Evidence says why: what was found, or the judge's evidence.
	Evidence string `json:"evidence,omitempty"`
}

// TriggerResult is one trigger query over its repeats.
type TriggerResult struct {
	// ID is the case's name in reports and baselines: SKILL/NUMBER, the
	// query's place among its skill's queries.
	ID            string `json:"id"`
	Skill         string `json:"skill"`
	Query         string `json:"query"`
	ShouldTrigger bool   `json:"should_trigger"`
	// At is where the query is written.
	At   diag.Pos    `json:"at"`
	Runs []RunResult `json:"runs"`
	// Rate is the share of runs that read Skill.
	Rate float64 `json:"rate"`
	// Threshold is the rate the query was held to: its suite's (or
	// --threshold), which another suite of the eval may set otherwise.
	Threshold float64 `json:"threshold"`
	Passed    bool    `json:"passed"`
}

// SkillStats are one skill's trigger statistics, counted over runs: a
// run of one of its should-trigger queries that reads it is a true
// positive, one that does not a false negative; a run of one of its
// should-not queries, or of another skill's should-trigger query, that
// reads it is a false positive.
type SkillStats struct {
	Skill          string  `json:"skill"`
	Queries        int     `json:"queries"`
	Passed         int     `json:"passed"`
	PassRate       float64 `json:"pass_rate"`
	TruePositives  int     `json:"true_positives"`
	FalsePositives int     `json:"false_positives"`
	FalseNegatives int     `json:"false_negatives"`
	// Precision and Recall are nil when undefined (nothing read, nothing
	// to find).
	Precision *float64 `json:"precision"`
	Recall    *float64 `json:"recall"`
}

// Confusion is a cell of the confusion table: of the runs of Skill's
// queries (ShouldTrigger says which), Runs read Read ("" for none).
type Confusion struct {
	Skill         string `json:"skill"`
	ShouldTrigger bool   `json:"should_trigger"`
	Read          string `json:"read"`
	Runs          int    `json:"runs"`
}

// CaseResult is one outcome case over its repeats.
type CaseResult struct {
	ID       string `json:"id"`
	Input    string `json:"input"`
	Expected string `json:"expected,omitempty"`
	// At is where the case is written.
	At       diag.Pos    `json:"at"`
	Runs     []RunResult `json:"runs"`
	PassRate float64     `json:"pass_rate"`
	// Threshold is the pass rate the case was held to, as
	// TriggerResult's.
	Threshold float64 `json:"threshold"`
	Passed    bool    `json:"passed"`
}

// Totals sum the report.
type Totals struct {
	Triggers       int         `json:"triggers"`
	TriggersPassed int         `json:"triggers_passed"`
	Cases          int         `json:"cases"`
	CasesPassed    int         `json:"cases_passed"`
	Runs           int         `json:"runs"`
	Usage          model.Usage `json:"usage"`
	Cost           float64     `json:"cost"`
	// Threshold is the first suite's; each case keeps its own.
	Threshold float64 `json:"threshold"`
}

// ReadReport reads a report written by WriteJSON (a --baseline).
func ReadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: not an fsd eval report: %v", path, err)
	}
	if r.Version != ReportVersion {
		return nil, fmt.Errorf("%s: report version %d; this fsd reads version %d (make it again with fsd eval --format json)", path, r.Version, ReportVersion)
	}
	return &r, nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
