package board

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxGoal bounds the goal text shown in a rendered node: a graph is for
// seeing the shape, the manifest holds the whole goal.
const maxGoal = 48

// Mermaid renders a board's tasks as a Mermaid flowchart, arrows pointing
// from a dependency to the task that waits for it. Node ids are n1, n2, …
// so no task id can collide with Mermaid syntax; the label shows the task
// id, its agent and its goal. A dependency on a task not in the list is
// drawn as a bare node, so a broken board still renders.
func Mermaid(tasks []TaskSpec) string {
	g := layout(tasks)
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for i, n := range g.nodes {
		fmt.Fprintf(&b, "  n%d[\"%s\"]\n", i+1, mermaidLabel(n))
	}
	for _, e := range g.edges {
		fmt.Fprintf(&b, "  n%d --> n%d\n", e[0]+1, e[1]+1)
	}
	return b.String()
}

// DOT renders a board's tasks as a Graphviz digraph, with the same nodes
// and edges as Mermaid.
func DOT(tasks []TaskSpec) string {
	g := layout(tasks)
	var b strings.Builder
	b.WriteString("digraph board {\n  rankdir=TB;\n  node [shape=box];\n")
	for _, n := range g.nodes {
		fmt.Fprintf(&b, "  %s [label=%s];\n", dotQuote(n.id), dotQuote(strings.Join(n.lines(), "\n")))
	}
	for _, e := range g.edges {
		fmt.Fprintf(&b, "  %s -> %s;\n", dotQuote(g.nodes[e[0]].id), dotQuote(g.nodes[e[1]].id))
	}
	b.WriteString("}\n")
	return b.String()
}

type gnode struct {
	id, agent, goal string
	missing         bool // referenced as a dependency but not a task
}

func (n gnode) lines() []string {
	if n.missing {
		return []string{n.id, "(not a task)"}
	}
	return []string{n.id, n.agent, n.goal}
}

type graph struct {
	nodes []gnode
	edges [][2]int // dependency index, dependent index
}

// layout numbers the tasks in order, default ids included, then the
// missing dependencies in order of first mention.
func layout(tasks []TaskSpec) graph {
	var g graph
	idx := map[string]int{}
	explicit := map[string]bool{}
	for _, t := range tasks {
		explicit[t.ID] = true
	}
	seq := 0
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		id := t.ID
		if id == "" {
			for {
				seq++
				id = fmt.Sprintf("t%d", seq)
				if _, taken := idx[id]; !taken && !explicit[id] {
					break
				}
			}
		}
		ids[i] = id
		if _, dup := idx[id]; dup {
			continue
		}
		idx[id] = len(g.nodes)
		agent := t.Assignee
		if agent == "" {
			agent = DefaultWorker
		}
		g.nodes = append(g.nodes, gnode{id: id, agent: agent, goal: shorten(t.Goal)})
	}
	for i, t := range tasks {
		for _, d := range t.Deps {
			j, ok := idx[d]
			if !ok {
				j = len(g.nodes)
				idx[d] = j
				g.nodes = append(g.nodes, gnode{id: d, missing: true})
			}
			g.edges = append(g.edges, [2]int{j, idx[ids[i]]})
		}
	}
	return g
}

func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxGoal {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:maxGoal-1])) + "…"
}

// mermaidLabel escapes a label for a quoted Mermaid node: quotes and the
// characters Mermaid reads as markup become entity codes.
func mermaidLabel(n gnode) string {
	r := strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "&", "#amp;")
	lines := n.lines()
	for i, l := range lines {
		lines[i] = r.Replace(l)
	}
	return strings.Join(lines, "<br/>")
}

func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
