package chaos

import (
	"encoding/json"
	"regexp"
	"slices"

	"github.com/fsdrun/fsd/model"
)

// knowledge is what the model can learn from one request. Every list is in
// order of first appearance, so the same request yields the same lists.
type knowledge struct {
	tools   []model.ToolDef
	offered map[string]bool
	// catalog are the skill ids in the current catalog.
	catalog []string
	// current are the handles of loaded skills' pointers; seen are every
	// handle in the window (receipts of skills that may be unloaded by now).
	current, seen []string
	tasks         []string
	roster        []string
	// called are tool names called earlier in the window; those not
	// offered now belong to unloaded skills (or never existed).
	called []string
}

var (
	catalogID   = regexp.MustCompile(`(?m)^- id: (\S+)$`)
	pointer     = regexp.MustCompile(`handle="(h_[0-9a-zA-Z_-]+)"`)
	anyHandle   = regexp.MustCompile(`h_[0-9a-f]{8,}`)
	boardLine   = regexp.MustCompile(`(?m)^- (\S+) \[(?:pending|running|completed|failed|cancelled)\]`)
	resultID    = regexp.MustCompile(`"id":"([^"\\]{1,64})"`)
	rosterField = regexp.MustCompile(`"roster":(\[[^\]]*\])`)
)

func learn(req *model.Request) *knowledge {
	k := &knowledge{tools: req.Tools, offered: map[string]bool{}}
	for _, t := range req.Tools {
		k.offered[t.Name] = true
	}
	for _, m := range catalogID.FindAllStringSubmatch(req.Context, -1) {
		k.catalog = addOnce(k.catalog, m[1])
	}
	for _, m := range pointer.FindAllStringSubmatch(req.Context, -1) {
		k.current = addOnce(k.current, m[1])
	}
	for _, msg := range req.Messages {
		if msg.Volatile { // the board's status
			for _, m := range boardLine.FindAllStringSubmatch(msg.Text, -1) {
				k.tasks = addOnce(k.tasks, m[1])
			}
		}
	}
	for _, msg := range req.Messages {
		for _, c := range msg.Calls {
			k.called = addOnce(k.called, c.Name)
		}
		if msg.Role != model.Tool {
			continue
		}
		for _, h := range anyHandle.FindAllString(msg.Text, -1) {
			k.seen = addOnce(k.seen, h)
		}
		switch msg.Name {
		case "addTask", "listTasks", "cancelTask", "runBoard":
			for _, m := range resultID.FindAllStringSubmatch(msg.Text, -1) {
				k.tasks = addOnce(k.tasks, m[1])
			}
			for _, m := range rosterField.FindAllStringSubmatch(msg.Text, -1) {
				var names []string
				if json.Unmarshal([]byte(m[1]), &names) == nil {
					for _, n := range names {
						k.roster = addOnce(k.roster, n)
					}
				}
			}
		}
	}
	return k
}

func addOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
