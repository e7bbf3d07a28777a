package spec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/model"
)

// Check runs the semantic checks that span files, after each file has
// loaded (LoadSkill and LoadWorkflow already checked what one file can say
// alone: ids, versions, durations, context-supply, item-visibility, flow).
// It reports: duplicate skill ids and tool names clashing across the
// enabled skills (each naming both files), `enabled` naming an unknown
// skill, task ids, assignees (skill/agent) and deps that do not exist,
// dependency cycles (printed from the earliest task), and static task
// counts over the board's caps. w may be nil: then only the skills are
// checked against each other, all of them counting as enabled.
func Check(w *Workflow, skills []*Skill) diag.List {
	var out diag.List
	byID := map[string]*Skill{}
	var ids []string
	for _, s := range skills {
		if s == nil || s.ID == "" {
			continue
		}
		if prev, dup := byID[s.ID]; dup {
			out = append(out, shadowed(s, prev))
			continue
		}
		byID[s.ID] = s
		ids = append(ids, s.ID)
	}
	sort.Strings(ids)

	enabled := map[string]bool{}
	if w == nil || !w.EnabledSet {
		for id := range byID {
			enabled[id] = true
		}
	} else {
		for i, id := range w.Enabled {
			if _, ok := byID[id]; !ok {
				out = append(out, diag.Diagnostic{Pos: posAt(w.EnabledPos, i, w.At("enabled")), Kind: "ref",
					Message: fmt.Sprintf("enabled names unknown skill %q", id), Hint: didYouMean(id, ids)})
				continue
			}
			enabled[id] = true
		}
	}
	if w != nil || len(skills) > 0 {
		out = append(out, checkToolClash(skills, byID, enabled)...)
		out = append(out, checkAgentSkills(skills, byID, ids)...)
	}
	if w != nil {
		out = append(out, checkTasks(w, byID, enabled, ids)...)
		out = append(out, checkBudgets(w, byID)...)
		out = append(out, checkPrices(w, byID)...)
		out = append(out, checkAgentBuiltins(w, byID, enabled)...)
	}
	out.Sort()
	return out
}

// checkAgentSkills checks that each id an agent's skills: lists is a
// skill found in the project (enabled or not: the agent names it).
func checkAgentSkills(skills []*Skill, byID map[string]*Skill, ids []string) diag.List {
	var out diag.List
	for _, s := range skills {
		if s == nil {
			continue
		}
		for _, a := range s.Agents {
			for i, id := range a.Skills {
				if _, ok := byID[id]; !ok {
					out = append(out, diag.Diagnostic{Pos: posAt(a.SkillsPos, i, a.At("skills")), Kind: "ref",
						Message: fmt.Sprintf("agent %q lists skill %q, which the project does not have", a.Name, id), Hint: didYouMean(id, ids)})
				}
			}
		}
	}
	return out
}

// idKey is the key that holds a skill's id in its file.
func idKey(s *Skill) string {
	if s.Format == FormatSkillMD {
		return "name"
	}
	return "id"
}

func posAt(list []diag.Pos, i int, fallback diag.Pos) diag.Pos {
	if i < len(list) {
		return list[i]
	}
	return fallback
}

// checkToolClash finds tool names declared by two enabled skills: the
// model sees one flat tool list, so two tools of one name cannot both work.
func checkToolClash(skills []*Skill, byID map[string]*Skill, enabled map[string]bool) diag.List {
	var out diag.List
	type owner struct {
		skill *Skill
		tool  *Tool
	}
	seen := map[string]owner{}
	for _, s := range skills {
		if s == nil || byID[s.ID] != s || !enabled[s.ID] {
			continue
		}
		for i := range s.Tools {
			t := &s.Tools[i]
			if t.Name == "" {
				continue
			}
			if prev, dup := seen[t.Name]; dup {
				if prev.skill == s {
					continue // reported by LoadSkill
				}
				out = append(out, diag.Errorf(t.At("name"), "duplicate", "tool %q clashes with the tool of the same name in skill %q at %s", t.Name, prev.skill.ID, prev.tool.At("name")))
				continue
			}
			seen[t.Name] = owner{s, t}
		}
	}
	return out
}

// maxDepHints bounds the unknown deps of a workflow that get a "did you
// mean" hint.
const maxDepHints = 100

func checkTasks(w *Workflow, byID map[string]*Skill, enabled map[string]bool, ids []string) diag.List {
	var out diag.List
	index := map[string]int{}
	var taskIDs []string
	for i, t := range w.Tasks {
		if t.ID == "" {
			continue
		}
		if t.ID == HostName {
			out = append(out, diag.Diagnostic{Pos: t.At("id"), Kind: "id",
				Message: fmt.Sprintf("task id %q is reserved: it names the host wherever tasks are named (fsd show --task host)", t.ID),
				Hint:    `rename the task, for example "host-task", and the deps that name it`})
		} else if msg := TaskIDProblem(t.ID); msg != "" {
			// The board refuses it when the run starts: say so here first.
			out = append(out, diag.Errorf(t.At("id"), "id", "task id %q %s", t.ID, msg))
		}
		if j, dup := index[t.ID]; dup {
			out = append(out, diag.Errorf(t.At("id"), "duplicate", "task id %q is used twice (first at line %d)", t.ID, w.Tasks[j].At("id").Line))
			continue
		}
		index[t.ID] = i
		taskIDs = append(taskIDs, t.ID)
	}
	limits := w.Limits.WithDefaults()
	if n := len(w.Tasks); n > limits.MaxPendingTasks {
		out = append(out, diag.Errorf(w.At("tasks"), "limit", "%d static tasks exceed max-pending-tasks (%d)", n, limits.MaxPendingTasks))
	} else if n > limits.MaxTotalTasks {
		out = append(out, diag.Errorf(w.At("tasks"), "limit", "%d static tasks exceed max-total-tasks (%d)", n, limits.MaxTotalTasks))
	}
	hints := 0
	for _, t := range w.Tasks {
		out = append(out, checkAssignee(t, byID, enabled, ids)...)
		for i, dep := range t.Deps {
			if _, ok := index[dep]; !ok {
				d := diag.Diagnostic{Pos: posAt(t.DepsPos, i, t.At("deps")), Kind: "ref",
					Message: fmt.Sprintf("task %q depends on unknown task %q", t.ID, dep)}
				// A hint compares dep with every task id: one for each of
				// thousands of unknown deps was quadratic (minutes), so
				// only the first maxDepHints get one.
				if hints < maxDepHints {
					hints++
					d.Hint = didYouMean(dep, taskIDs)
				}
				out = append(out, d)
			}
		}
	}
	out = append(out, cycles(w.Tasks, index)...)
	return out
}

func checkAssignee(t Task, byID map[string]*Skill, enabled map[string]bool, ids []string) diag.List {
	skillID, agent, ok := strings.Cut(t.Assignee, "/")
	if t.Assignee == "" || !ok || skillID == "" || agent == "" {
		return nil // empty: the default worker; malformed: LoadWorkflow said so
	}
	at := t.At("assignee")
	s, found := byID[skillID]
	switch {
	case !found:
		return diag.List{{Pos: at, Kind: "ref", Message: fmt.Sprintf("unknown assignee %q: no skill %q", t.Assignee, skillID), Hint: didYouMean(skillID, ids)}}
	case !enabled[skillID]:
		return diag.List{diag.Errorf(at, "ref", "assignee %q: skill %q is not enabled", t.Assignee, skillID)}
	}
	if _, ok := s.Agent(agent); !ok {
		names := make([]string, len(s.Agents))
		for i, a := range s.Agents {
			names[i] = a.Name
		}
		hint := didYouMean(agent, names)
		if hint == "" {
			hint = "it has no agents"
			if len(names) > 0 {
				hint = "agents: " + strings.Join(names, ", ")
			}
		}
		return diag.List{{Pos: at, Kind: "ref", Message: fmt.Sprintf("unknown assignee %q: skill %q has no agent %q", t.Assignee, skillID, agent), Hint: hint}}
	}
	return nil
}

// cycles reports each dependency cycle once, as a path that starts and
// ends at the cycle's earliest task in file order, at that task's id:
// `dependency cycle: "a" -> "b" -> "a"`. It finds strongly connected
// components (Tarjan), so every cycle is found however the tasks are
// ordered, in time linear in tasks and deps.
func cycles(tasks []Task, index map[string]int) diag.List {
	n := len(tasks)
	deps := make([][]int, n)
	for i, t := range tasks {
		if j, ok := index[t.ID]; !ok || j != i {
			continue // duplicate id: already an error
		}
		for _, d := range t.Deps {
			if j, ok := index[d]; ok {
				deps[i] = append(deps[i], j)
			}
		}
	}
	var out diag.List
	for _, comp := range scc(deps) {
		first := comp[0]
		for _, v := range comp {
			first = min(first, v)
		}
		self := false
		for _, d := range deps[first] {
			self = self || d == first
		}
		if len(comp) == 1 && !self {
			continue
		}
		path := cyclePath(deps, comp, first)
		names := make([]string, len(path))
		for i, v := range path {
			names[i] = quote(tasks[v].ID)
		}
		out = append(out, diag.Errorf(tasks[first].At("id"), "cycle", "dependency cycle: %s", strings.Join(names, " -> ")))
	}
	return out
}

// cyclePath is the shortest path from first back to itself inside comp,
// following deps in file order (BFS), so the printed cycle is stable.
func cyclePath(deps [][]int, comp []int, first int) []int {
	in := map[int]bool{}
	for _, v := range comp {
		in[v] = true
	}
	prev := map[int]int{}
	queue := []int{first}
	visited := map[int]bool{}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, d := range deps[v] {
			if !in[d] {
				continue
			}
			if d == first {
				path := []int{first}
				for x := v; x != first; x = prev[x] {
					path = append(path, x)
				}
				// path is first, v, …, back to first's successor, reversed.
				for i, j := 1, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return append(path, first)
			}
			if !visited[d] {
				visited[d] = true
				prev[d] = v
				queue = append(queue, d)
			}
		}
	}
	return []int{first, first}
}

// scc returns the strongly connected components of the graph (Tarjan's
// algorithm, iterative so a long chain of tasks cannot overflow the stack).
func scc(g [][]int) [][]int {
	n := len(g)
	idx := make([]int, n)
	low := make([]int, n)
	on := make([]bool, n)
	for i := range idx {
		idx[i] = -1
	}
	var out [][]int
	var st []int
	counter := 0
	type frame struct{ v, next int }
	for root := 0; root < n; root++ {
		if idx[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		idx[root], low[root] = counter, counter
		counter++
		st = append(st, root)
		on[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.next < len(g[f.v]) {
				w := g[f.v][f.next]
				f.next++
				if idx[w] < 0 {
					idx[w], low[w] = counter, counter
					counter++
					st = append(st, w)
					on[w] = true
					call = append(call, frame{w, 0})
				} else if on[w] {
					low[f.v] = min(low[f.v], idx[w])
				}
				continue
			}
			v := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				low[p] = min(low[p], low[v])
			}
			if low[v] == idx[v] {
				var comp []int
				for {
					x := st[len(st)-1]
					st = st[:len(st)-1]
					on[x] = false
					comp = append(comp, x)
					if x == v {
						break
					}
				}
				out = append(out, comp)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return minOf(out[i]) < minOf(out[j]) })
	return out
}

func minOf(s []int) int {
	m := s[0]
	for _, v := range s {
		m = min(m, v)
	}
	return m
}

// checkBudgets reports limits.agents keys that name no agent: a budget
// under a mistyped name would bound nothing.
func checkBudgets(w *Workflow, byID map[string]*Skill) diag.List {
	var out diag.List
	var known []string
	for _, s := range byID {
		for _, a := range s.Agents {
			known = append(known, s.ID+"/"+a.Name)
		}
	}
	sort.Strings(known)
	names := make([]string, 0, len(w.Limits.Agents))
	for name := range w.Limits.Agents {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		skill, agent, ok := strings.Cut(name, "/")
		if !ok {
			continue // "worker", or malformed (reported when loading)
		}
		if s := byID[skill]; s != nil {
			if _, ok := s.Agent(agent); ok {
				continue
			}
		}
		out = append(out, diag.Diagnostic{Pos: w.Limits.Agents[name].Pos, Kind: "ref",
			Message: fmt.Sprintf("limits.agents names unknown agent %q: its budget would bound nothing", name),
			Hint:    didYouMean(name, append(known, DefaultWorkerName))})
	}
	return out
}

// checkPrices warns about a price for a model string no manifest names: a
// typo there ("openai/gpt-5.4-mni") prices nothing and every cost reads 0.
// A warning, not an error: such a price still applies to a run whose
// --model names it. A workflow with no model: of its own takes its model
// from --model, so nothing is checked.
func checkPrices(w *Workflow, byID map[string]*Skill) diag.List {
	if w.Model == "" || len(w.Prices) == 0 {
		return nil
	}
	used := map[string]bool{}
	use := func(m string) {
		for _, one := range model.Chain(m) {
			if one != "" {
				used[one] = true
			}
		}
	}
	use(w.Model)
	if w.Host != nil {
		use(w.Host.Model)
	}
	for _, s := range byID {
		for _, a := range s.Agents {
			use(a.Model)
		}
	}
	known := make([]string, 0, len(used))
	for m := range used {
		known = append(known, m)
	}
	sort.Strings(known)
	names := make([]string, 0, len(w.Prices))
	for m := range w.Prices {
		names = append(names, m)
	}
	sort.Strings(names)
	var out diag.List
	for _, m := range names {
		if used[m] {
			continue
		}
		hint := didYouMean(m, known)
		if hint == "" {
			hint = "models this workflow uses: " + strings.Join(known, ", ")
		}
		out = append(out, diag.Diagnostic{Pos: w.Prices[m].Pos, Kind: "ref", Severity: diag.Warning,
			Message: fmt.Sprintf("prices names model %q, which no workflow, host or agent uses: it prices only a run with --model %s", m, m),
			Hint:    hint})
	}
	return out
}
