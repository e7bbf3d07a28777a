package cassette

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fsdrun/fsd/model"
)

// explain says how a live request differs from a recorded one, first
// difference first, naming the other parts that differ too. now is the live
// request, for quoting what it says where the cassette only has hashes.
func explain(rec, got Summary, now *model.Request) string {
	var parts []string
	first := ""
	add := func(part, detail string) {
		if first == "" {
			first = detail
		}
		parts = append(parts, part)
	}
	if d := messagesDiff(rec.Messages, got.Messages, now); d != "" {
		add("messages", d)
	}
	if d := toolsDiff(rec.Tools, got.Tools); d != "" {
		add("tools", d)
	}
	if d := contextDiff(rec.Context, got.Context, now.Context); d != "" {
		add("context", d)
	}
	if rec.Goal.Hash != got.Goal.Hash {
		add("task goal", textDiff("task goal", rec.Goal, got.Goal))
	}
	if rec.Input.Hash != got.Input.Hash {
		add("input", textDiff("input", rec.Input, got.Input))
	}
	if first == "" {
		return "the request differs from the cassette" // e.g. a cassette made by another fsd version
	}
	if len(parts) > 1 {
		first += " (also differ: " + strings.Join(parts[1:], ", ") + ")"
	}
	return first
}

func messagesDiff(rec, got []Message, now *model.Request) string {
	for i := range min(len(rec), len(got)) {
		r, g := rec[i], got[i]
		n := fmt.Sprintf("message %d (%s)", i+1, g.Role)
		switch {
		case r.Role != g.Role:
			return fmt.Sprintf("message %d role differs: recorded %s, now %s", i+1, r.Role, g.Role)
		case r.Text.Hash != g.Text.Hash:
			return textDiff(n+" text", r.Text, g.Text)
		case r.CallID != g.CallID:
			return fmt.Sprintf("%s answers call %q, recorded %q", n, g.CallID, r.CallID)
		case r.IsError != g.IsError:
			return fmt.Sprintf("%s error flag differs: recorded %v, now %v", n, r.IsError, g.IsError)
		case r.Artifact != g.Artifact || r.Name != g.Name:
			return fmt.Sprintf("%s tool name or artifact differs", n)
		}
		if d := callsDiff(r.Calls, g.Calls); d != "" {
			return n + " " + d
		}
	}
	if len(rec) != len(got) {
		d := fmt.Sprintf("message count differs: recorded %d, now %d", len(rec), len(got))
		if len(got) > len(rec) {
			m := now.Messages[len(rec)]
			d += fmt.Sprintf("; first new: message %d (%s) %q", len(rec)+1, m.Role, head(m.Text))
		}
		return d
	}
	return ""
}

func callsDiff(rec, got []Call) string {
	for j := range min(len(rec), len(got)) {
		r, g := rec[j], got[j]
		switch {
		case r.Name != g.Name:
			return fmt.Sprintf("tool call %d differs: recorded %s, now %s", j+1, r.Name, g.Name)
		case r.ID != g.ID:
			return fmt.Sprintf("tool call %d (%s) id differs: recorded %q, now %q", j+1, g.Name, r.ID, g.ID)
		case r.Args != g.Args:
			return fmt.Sprintf("tool call %d (%s) arguments differ", j+1, g.Name)
		}
	}
	if len(rec) != len(got) {
		return fmt.Sprintf("has %d tool calls, recorded %d", len(got), len(rec))
	}
	return ""
}

func toolsDiff(rec, got []Tool) string {
	names := func(ts []Tool) []string {
		out := make([]string, len(ts))
		for i, t := range ts {
			out[i] = t.Name
		}
		return out
	}
	rn, gn := names(rec), names(got)
	var missing, extra, changed []string
	for _, t := range rec {
		if i := slices.Index(gn, t.Name); i < 0 {
			missing = append(missing, t.Name)
		} else if got[i].Hash != t.Hash {
			changed = append(changed, t.Name)
		}
	}
	for _, t := range got {
		if !slices.Contains(rn, t.Name) {
			extra = append(extra, t.Name)
		}
	}
	var d []string
	if len(missing) > 0 {
		d = append(d, "missing "+strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		d = append(d, "extra "+strings.Join(extra, ", "))
	}
	if len(changed) > 0 {
		d = append(d, "changed description or schema: "+strings.Join(changed, ", "))
	}
	if len(d) == 0 && !slices.Equal(rn, gn) {
		d = append(d, fmt.Sprintf("order: recorded [%s], now [%s]", strings.Join(rn, " "), strings.Join(gn, " ")))
	}
	if len(d) == 0 {
		return ""
	}
	return "tools differ: " + strings.Join(d, "; ")
}

func contextDiff(rec, got Text, now string) string {
	if rec.Hash == got.Hash {
		return ""
	}
	lines := strings.Split(now, "\n")
	for i := range min(len(rec.Lines), len(got.Lines)) {
		if rec.Lines[i] != got.Lines[i] {
			return fmt.Sprintf("context differs at line %d: now %q", i+1, head(lines[i]))
		}
	}
	if len(rec.Lines) != len(got.Lines) {
		return fmt.Sprintf("context differs: recorded %d lines, now %d", len(rec.Lines), len(got.Lines))
	}
	return textDiff("context", rec, got)
}

func textDiff(what string, rec, got Text) string {
	return fmt.Sprintf("%s differs: recorded %q (%d bytes), now %q (%d bytes)", what, rec.Head, rec.Len, got.Head, got.Len)
}
