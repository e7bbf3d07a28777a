package ui

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsdrun/fsd/internal/redact"
	"github.com/fsdrun/fsd/runrecord"
)

//go:embed assets
var assets embed.FS

// Server serves the runs under a runs dir.
type Server struct {
	runsDir string
	secrets redact.Secrets
	// Poll is how often a live page's record is checked for growth.
	Poll time.Duration
	// Chat puts a message box on a run's page and answer buttons on its
	// pending calls, which post to fsd serve's API (the server that
	// serves these pages then); fsd ui only reads.
	Chat bool
	now  func() time.Time
	// idx keeps the indexes of the runs whose pages were fetched lately.
	idx indexes
}

// NewServer serves runsDir. secrets are masked in every response.
func NewServer(runsDir string, secrets []string) *Server {
	return &Server{runsDir: runsDir, secrets: redact.New(secrets...), Poll: 300 * time.Millisecond, now: time.Now}
}

// Close closes the record files the server keeps open for the runs
// whose pages it sent lately.
func (s *Server) Close() { s.idx.close() }

// Handler routes the UI: / (runs), /run/ID (a run), /api/runs,
// /api/runs/ID (?from=N: the page of tasks from the N-th), /api/runs/ID/live (server-sent events), /assets/.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	// Browsers ask for /favicon.ico whatever the page says.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "favicon.svg")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { s.page(w, "runs", "", nil) })
	mux.HandleFunc("GET /run/{id}", func(w http.ResponseWriter, r *http.Request) { s.page(w, "run", r.PathValue("id"), nil) })
	mux.HandleFunc("GET /api/runs", s.listRuns)
	mux.HandleFunc("GET /api/runs/{id}", s.getRun)
	mux.HandleFunc("GET /api/runs/{id}/live", s.live)
	return mux
}

// dir resolves a run id, or the part of one a person typed, to its
// folder under the runs dir (runrecord.FindID: never a path elsewhere).
func (s *Server) dir(id string) (string, bool) {
	d, err := runrecord.FindID(s.runsDir, id)
	return d, err == nil
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	sums, err := runrecord.List(s.runsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if sums == nil {
		sums = []runrecord.Summary{}
	}
	for i := range sums {
		sums[i].Seed, sums[i].Seal = "", ""
		sums[i].Workflow = sums[i].ShownWorkflow()
	}
	s.json(w, sums)
}

// getRun sends one page of the run's tasks (G6), from the run's index
// kept between fetches (G10).
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	d, ok := s.dir(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such run", http.StatusNotFound)
		return
	}
	from := 0
	if q := r.URL.Query().Get("from"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 {
			http.Error(w, "from is the index of a task: a number from 0", http.StatusBadRequest)
			return
		}
		from = n
	}
	v, err := s.idx.page(d, from, s.now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.json(w, v)
}

func (s *Server) json(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(s.maskBytes(b))
}

// S3: every response and report is masked, in the JSON it is sent as
// (redact masks a secret's JSON-escaped form too).
func (s *Server) maskBytes(b []byte) []byte { return s.secrets.Bytes(b) }

// live sends an "update" event whenever the run's record grows, and
// "done" once the run is no longer live (runrecord.Status.Live): a run
// waiting for an approval is live, since an answer lets it go on. The
// page refetches the run on each update.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	d, ok := s.dir(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such run", http.StatusNotFound)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	last := ""
	tick := time.NewTicker(s.Poll)
	defer tick.Stop()
	for {
		stamp, live := fingerprint(d)
		if stamp != last {
			last = stamp
			fmt.Fprintf(w, "event: update\ndata: %d\n\n", time.Now().UnixMilli())
			fl.Flush()
		}
		if !live {
			fmt.Fprint(w, "event: done\ndata: 1\n\n")
			fl.Flush()
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// fingerprint is the sizes and times of a record's files, and whether
// the run is live: run.json says so and a process holds the folder
// (runrecord.Current), so a killed run is done too.
func fingerprint(dir string) (string, bool) {
	var b strings.Builder
	for _, name := range []string{runrecord.RunFile, runrecord.EventsFile, runrecord.RequestsFile, runrecord.BoardFile} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", name, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	sum, err := runrecord.ReadSummary(dir)
	sum.Status = runrecord.Current(dir, sum)
	return b.String(), err == nil && sum.Going()
}

// pageTmpl is parsed at the first page, not at start: every fsd command
// would pay for it.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseFS(assets, "assets/page.html"))
})

// pageData fills page.html: linked assets for the server, inlined ones
// (and the run's data) for a report.
type pageData struct {
	Kind   string // runs, run
	RunID  string
	Inline bool
	CSS    template.CSS
	JS     template.JS
	Data   template.JS // the run's JSON, for a report
	Chat   bool        // the chat box (Server.Chat)
	Page   int         // PageTasks, for a report's page to page by
}

func (s *Server) page(w http.ResponseWriter, kind, id string, _ context.Context) {
	if kind == "run" {
		d, ok := s.dir(id)
		if !ok {
			http.Error(w, "no such run", http.StatusNotFound)
			return
		}
		id = filepath.Base(d) // the page asks for the run it shows, not for whatever else may match later
	}
	var buf bytes.Buffer
	if err := pageTmpl().Execute(&buf, pageData{Kind: kind, RunID: id, Chat: s.Chat, Page: PageTasks}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}
