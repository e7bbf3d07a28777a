package eval

import "sort"

// score fills in what the runs imply: rates, pass marks, per-skill
// statistics, the confusion table and the totals (V2). thresholds are
// the cases' by id.
func score(rep *Report, thresholds map[string]float64) {
	rep.Passed = true
	t := &rep.Totals
	stats := map[string]*SkillStats{}
	stat := func(id string) *SkillStats {
		if s, ok := stats[id]; ok {
			return s
		}
		s := &SkillStats{Skill: id}
		stats[id] = s
		return s
	}
	type cell struct {
		skill string
		pos   bool
		read  string
	}
	cells := map[cell]int{}
	for i := range rep.Triggers {
		tr := &rep.Triggers[i]
		st := stat(tr.Skill)
		st.Queries++
		reads := 0
		for _, r := range tr.Runs {
			t.Runs++
			t.Usage, t.Cost = t.Usage.Add(r.Usage), t.Cost+r.Cost
			own := contains(r.Reads, tr.Skill)
			if own {
				reads++
			}
			switch {
			case tr.ShouldTrigger && own:
				st.TruePositives++
			case tr.ShouldTrigger:
				st.FalseNegatives++
			case own:
				st.FalsePositives++
			}
			seen := map[string]bool{}
			for _, id := range r.Reads {
				if seen[id] {
					continue
				}
				seen[id] = true
				cells[cell{tr.Skill, tr.ShouldTrigger, id}]++
				if id != tr.Skill && tr.ShouldTrigger {
					// The query is labelled as another skill's: reading
					// this one instead is a false read. A should-not query
					// says nothing about the skills it does not name.
					stat(id).FalsePositives++
				}
			}
			if len(r.Reads) == 0 {
				cells[cell{tr.Skill, tr.ShouldTrigger, ""}]++
			}
		}
		if n := len(tr.Runs); n > 0 {
			tr.Rate = float64(reads) / float64(n)
		}
		// skill-creator's rule: a should-trigger query passes at or above
		// the threshold, a should-not query below it.
		th := thresholds[tr.ID]
		tr.Threshold = th
		tr.Passed = tr.Rate >= th == tr.ShouldTrigger
		for _, r := range tr.Runs {
			if r.Error != "" {
				tr.Passed = false // a run that failed measured nothing
			}
		}
		t.Triggers++
		if tr.Passed {
			t.TriggersPassed++
			st.Passed++
		} else {
			rep.Passed = false
		}
	}
	for _, s := range stats {
		if s.Queries > 0 {
			s.PassRate = float64(s.Passed) / float64(s.Queries)
		}
		if d := s.TruePositives + s.FalsePositives; d > 0 {
			s.Precision = ptr(float64(s.TruePositives) / float64(d))
		}
		if d := s.TruePositives + s.FalseNegatives; d > 0 {
			s.Recall = ptr(float64(s.TruePositives) / float64(d))
		}
		rep.Skills = append(rep.Skills, *s)
	}
	sort.Slice(rep.Skills, func(i, j int) bool { return rep.Skills[i].Skill < rep.Skills[j].Skill })
	rep.Confusion = []Confusion{}
	for c, n := range cells {
		rep.Confusion = append(rep.Confusion, Confusion{Skill: c.skill, ShouldTrigger: c.pos, Read: c.read, Runs: n})
	}
	sort.Slice(rep.Confusion, func(i, j int) bool {
		a, b := rep.Confusion[i], rep.Confusion[j]
		if a.Skill != b.Skill {
			return a.Skill < b.Skill
		}
		if a.ShouldTrigger != b.ShouldTrigger {
			return a.ShouldTrigger
		}
		return a.Read < b.Read
	})
	for i := range rep.Cases {
		c := &rep.Cases[i]
		passed := 0
		for _, r := range c.Runs {
			t.Runs++
			t.Usage, t.Cost = t.Usage.Add(r.Usage), t.Cost+r.Cost
			if r.Passed {
				passed++
			}
		}
		if n := len(c.Runs); n > 0 {
			c.PassRate = float64(passed) / float64(n)
		}
		c.Threshold = thresholds[c.ID]
		c.Passed = len(c.Runs) > 0 && c.PassRate >= c.Threshold
		for _, r := range c.Runs {
			if r.Error != "" {
				// As for a trigger case: a run that failed measured
				// nothing, and the others reaching the threshold passed
				// a replay whose cassette was missing.
				c.Passed = false
			}
		}
		t.Cases++
		if c.Passed {
			t.CasesPassed++
		} else {
			rep.Passed = false
		}
	}
	if rep.Triggers == nil {
		rep.Triggers = []TriggerResult{}
	}
	if rep.Cases == nil {
		rep.Cases = []CaseResult{}
	}
	if rep.Skills == nil {
		rep.Skills = []SkillStats{}
	}
}

func ptr(f float64) *float64 { return &f }
