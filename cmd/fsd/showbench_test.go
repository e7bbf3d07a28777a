package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsdrun/fsd/ui"
)

// BenchmarkShow is `fsd show` of the record of a fan-out of n tasks: the
// summary, one task's model calls (--task), every call (--requests, text
// and JSON), `fsd report` of it and the first page fsd ui sends of it,
// built afresh and from the index fsd ui keeps between fetches. The record is made once, before the timer starts; each figure is per
// task of the run, so a reader that costs more per task as the record
// grows shows here.
//
//	go test ./cmd/fsd -run '^$' -bench Show -benchtime 3x
func BenchmarkShow(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		dir := fanoutRun(b, n)
		for _, c := range []struct {
			name string
			args []string
		}{{"summary", []string{"show", dir}}, {"task", []string{"show", dir, "--task", "t5"}},
			{"requests", []string{"show", dir, "--requests"}}, {"requests-json", []string{"show", dir, "--requests", "--format", "json"}},
			{"report", []string{"report", dir, "-o", "-"}}} {
			b.Run(fmt.Sprintf("tasks=%d/%s", n, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var errb bytes.Buffer
					if code := run(c.args, io.Discard, &errb); code != exitOK {
						b.Fatalf("exit %d: %s", code, errb.String())
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/task")
			})
		}
		// The web view's first page of the run, as fsd ui sends it.
		b.Run(fmt.Sprintf("tasks=%d/page", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ui.ViewPage(dir, 0, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/task")
		})
		// The same page fetched again from fsd ui's server, which keeps
		// the run's index between fetches: a fetch costs the page.
		b.Run(fmt.Sprintf("tasks=%d/page-kept", n), func(b *testing.B) {
			web := ui.NewServer(filepath.Dir(dir), nil)
			defer web.Close()
			h := web.Handler()
			get := func() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/api/runs/"+filepath.Base(dir), nil))
				if w.Code != 200 {
					b.Fatal(w.Body.String())
				}
			}
			get()
			b.ReportAllocs()
			for b.Loop() {
				get()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/task")
		})
	}
}
