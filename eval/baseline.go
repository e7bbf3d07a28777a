package eval

import "fmt"

// Comparison is a report set against an earlier one (--baseline): one
// Delta per number that changed, appeared or went away.
type Comparison struct {
	File   string  `json:"file"`
	Deltas []Delta `json:"deltas"`
	// Worse counts the deltas marked Worse.
	Worse int `json:"worse"`
}

// Delta is one number of a case or skill, before and after. Before or
// After is nil when the case is new or gone.
type Delta struct {
	// Kind is trigger, case or skill; ID the trigger's skill and query,
	// the case's id or the skill's.
	Kind   string   `json:"kind"`
	ID     string   `json:"id"`
	Metric string   `json:"metric"` // rate, pass_rate, recall, precision
	Before *float64 `json:"before"`
	After  *float64 `json:"after"`
	// Worse marks a change the wrong way: lost recall or precision, a
	// should-trigger query read less (a should-not one more), a case
	// passing less often.
	Worse bool `json:"worse"`
}

// Compare sets rep against base, recording the result in rep.Baseline.
// Trigger cases are matched by skill and query (their numbers may
// shift), outcome cases by id, skills by id; a change the wrong way is
// marked Worse (V9).
func Compare(rep, base *Report, file string) *Comparison {
	c := &Comparison{File: file, Deltas: []Delta{}}
	add := func(kind, id, metric string, before, after *float64, higherIsBetter bool) {
		if before != nil && after != nil && *before == *after || before == nil && after == nil {
			return
		}
		d := Delta{Kind: kind, ID: id, Metric: metric, Before: before, After: after}
		if before != nil && after != nil {
			d.Worse = higherIsBetter && *after < *before || !higherIsBetter && *after > *before
		}
		if d.Worse {
			c.Worse++
		}
		c.Deltas = append(c.Deltas, d)
	}
	type tkey struct{ skill, query string }
	old := map[tkey]TriggerResult{}
	for _, t := range base.Triggers {
		old[tkey{t.Skill, t.Query}] = t
	}
	seen := map[tkey]bool{}
	for _, t := range rep.Triggers {
		k := tkey{t.Skill, t.Query}
		seen[k] = true
		var before *float64
		if o, ok := old[k]; ok {
			before = ptr(o.Rate)
		}
		add("trigger", triggerName(t), "rate", before, ptr(t.Rate), t.ShouldTrigger)
	}
	for _, t := range base.Triggers {
		if !seen[tkey{t.Skill, t.Query}] {
			add("trigger", triggerName(t), "rate", ptr(t.Rate), nil, t.ShouldTrigger)
		}
	}
	oldCases := map[string]CaseResult{}
	for _, cs := range base.Cases {
		oldCases[cs.ID] = cs
	}
	for _, cs := range rep.Cases {
		var before *float64
		if o, ok := oldCases[cs.ID]; ok {
			before = ptr(o.PassRate)
			delete(oldCases, cs.ID)
		}
		add("case", cs.ID, "pass_rate", before, ptr(cs.PassRate), true)
	}
	for _, cs := range base.Cases {
		if _, gone := oldCases[cs.ID]; gone {
			add("case", cs.ID, "pass_rate", ptr(cs.PassRate), nil, true)
		}
	}
	oldSkills := map[string]SkillStats{}
	for _, s := range base.Skills {
		oldSkills[s.Skill] = s
	}
	for _, s := range rep.Skills {
		o := oldSkills[s.Skill]
		add("skill", s.Skill, "recall", o.Recall, s.Recall, true)
		add("skill", s.Skill, "precision", o.Precision, s.Precision, true)
	}
	rep.Baseline = c
	return c
}

func triggerName(t TriggerResult) string { return fmt.Sprintf("%s %q", t.Skill, t.Query) }
