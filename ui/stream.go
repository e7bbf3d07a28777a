package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fsdrun/fsd/board"
	"github.com/fsdrun/fsd/event"
	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/runrecord"
)

// PageTasks is how many tasks a run page lists at once: fsd ui's server
// sends that many, and a report's page draws that many of those it holds.
// A board, a timeline and a token chart of more are not read by anyone,
// and a browser takes seconds to lay them out.
//
// G8: a run page draws PageTasks tasks, with links to the others.
const PageTasks = 200

// streamed is a record being read for its page: the task table is built
// from the board and the events, and the generators are read one at a
// time when written.
type streamed struct {
	b *viewBuilder
	s *runrecord.Stream
}

// openView reads the record in dir's task table: the board's tasks and
// the events, then each generator's tokens from the index. Close its
// stream when done.
func openView(dir string, now time.Time) (*streamed, error) {
	s, err := runrecord.OpenStream(dir)
	if err != nil {
		return nil, err
	}
	b := newViewBuilder(s.Summary, now)
	err = runrecord.EachBoardTask(dir, func(t *board.Task) error { b.boardTask(t); return nil })
	if err == nil || errors.Is(err, os.ErrNotExist) {
		err = runrecord.EachEvent(dir, applied, func(e event.Event) error { b.event(e); return nil })
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	b.waiting()
	for _, g := range s.Gens {
		b.addUsage(g.Task, g.Agent, g.In, g.Out)
	}
	return &streamed{b: b, s: s}, nil
}

// viewEvents mark the lines of the events the page applies (viewBuilder.event).
var viewEvents = [][]byte{[]byte(`"type":"task.`), []byte(`"type":"` + event.ToolProgress + `"`), []byte(`"type":"` + event.ToolResult + `"`)}

// applied says whether an event line may be one the page applies: the
// others are not decoded.
func applied(line []byte) bool {
	for _, m := range viewEvents {
		if bytes.Contains(line, m) {
			return true
		}
	}
	return false
}

// ViewPage is View of the record in dir, its tasks from the from-th up
// to PageTasks of them (TasksTotal says how many there are) and of the
// generators the host's and those of the page's tasks: what it decodes
// of the record is the page's (the rest is indexed: where each task's
// lines are). fsd ui keeps the index between fetches (Server).
//
// G6: a run page sends and builds one page of tasks.
func ViewPage(dir string, from int, now time.Time) (RunView, error) {
	x, err := openIndex(dir)
	if err != nil {
		return RunView{}, err
	}
	defer x.close()
	return x.page(max(from, 0), now)
}

// WriteReport writes the run page of the record in dir as one
// self-contained HTML file, as Report does, reading and writing one
// generator at a time: it holds the task table and one generator, not
// the run. secrets are masked.
//
// G7: fsd report writes each generator before it reads the next.
func WriteReport(w io.Writer, dir string, secrets []string) error {
	return writeReport(w, dir, secrets, time.Now())
}

func writeReport(w io.Writer, dir string, secrets []string, now time.Time) error {
	st, err := openView(dir, now)
	if err != nil {
		return err
	}
	defer st.s.Close()
	head, tail, err := reportShell(st.b.v.Summary.ID)
	if err != nil {
		return err
	}
	jw := &jsonWriter{w: w, mask: redact.New(secrets...)}
	jw.raw(head)
	v := st.b.v
	jw.raw(`{"summary":`)
	jw.value(v.Summary)
	jw.raw(`,"tasks":`)
	tasks := st.b.tasks()
	if tasks == nil {
		jw.raw("null")
	} else {
		for i := range tasks {
			jw.raw(sep(i))
			jw.value(tasks[i])
		}
		jw.raw("]")
	}
	jw.raw(`,"gens":`)
	for i := range st.s.Gens {
		g, err := st.s.Read(i)
		if err != nil {
			return err
		}
		jw.raw(sep(i))
		jw.value(st.b.gen(g))
	}
	if len(st.s.Gens) == 0 {
		jw.raw("null")
	} else {
		jw.raw("]")
	}
	jw.raw(`,"live":`)
	jw.value(v.Live)
	jw.raw(`,"now":`)
	jw.value(v.Now)
	jw.raw("}")
	jw.raw(tail)
	return jw.err
}

// sep is what comes before a list's i-th element.
func sep(i int) string {
	if i == 0 {
		return "["
	}
	return ","
}

// reportMark stands for the run's data in the page's shell, which is
// written around it.
const reportMark = "FSD_REPORT_DATA_9f1c"

// reportShell is the report page before and after its data.
func reportShell(id string) (head, tail string, err error) {
	css, err := assets.ReadFile("assets/style.css")
	if err != nil {
		return "", "", err
	}
	js, err := assets.ReadFile("assets/app.js")
	if err != nil {
		return "", "", err
	}
	var buf bytes.Buffer
	if err := pageTmpl().Execute(&buf, pageData{Kind: "run", RunID: id, Inline: true,
		CSS: template.CSS(css), JS: template.JS(js), Data: template.JS(reportMark), Page: PageTasks}); err != nil {
		return "", "", err
	}
	head, tail, ok := strings.Cut(buf.String(), reportMark)
	if !ok {
		return "", "", errors.New("report: the page has no place for the data")
	}
	return head, tail, nil
}

// jsonWriter writes a JSON value a piece at a time, each masked and safe
// inside a script element; the first error stops it.
type jsonWriter struct {
	w    io.Writer
	mask redact.Secrets
	err  error
}

func (j *jsonWriter) raw(s string) {
	if j.err == nil {
		_, j.err = io.WriteString(j.w, s)
	}
}

// value writes v as json.Marshal encodes it, masked, with "</" escaped
// so that it cannot end the script element early. A secret sits inside
// one string, so masking each value masks it.
func (j *jsonWriter) value(v any) {
	if j.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		j.err = err
		return
	}
	b = bytes.ReplaceAll(j.mask.Bytes(b), []byte("</"), []byte(`<\/`))
	_, j.err = j.w.Write(b)
}
