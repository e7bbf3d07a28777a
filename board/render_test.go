package board

import (
	"path/filepath"
	"testing"

	"github.com/fsdrun/fsd/internal/golden"
)

func TestRender(t *testing.T) {
	tasks := []TaskSpec{
		{ID: "gather", Assignee: "weekly-report/extractor", Goal: "Collect last week's rows."},
		{ID: "end", Assignee: "weekly-report/summarizer", Goal: `Write the "brief" <short> & sweet, in a paragraph that is longer than the label allows`, Deps: []string{"gather", "t1"}},
		{Goal: "Check the numbers", Deps: []string{"gather"}},
		{ID: "orphan", Goal: "Depends on nothing real", Deps: []string{"missing"}},
	}
	golden.CheckString(t, filepath.Join("testdata", "graph.mmd"), Mermaid(tasks))
	golden.CheckString(t, filepath.Join("testdata", "graph.dot"), DOT(tasks))
	golden.CheckString(t, filepath.Join("testdata", "empty.mmd"), Mermaid(nil))
}
