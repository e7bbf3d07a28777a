package ui_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/ui"
)

// G10: fsd ui keeps a run's index between fetches of its pages: while the
// record grows (lines appended, a torn line made whole, board.json
// written), each page it sends is the page ViewPage builds of the record
// as it is then, and a fetch reads what is new, not the run again.
func TestServerKeepsIndex(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for name, done := range map[string]string{"example": exampleRun(t), "fanout": fanoutRun(t, ui.PageTasks+50)} {
		t.Run(name, func(t *testing.T) {
			runs := t.TempDir()
			dir := filepath.Join(runs, "r1")
			if err := os.CopyFS(dir, os.DirFS(done)); err != nil {
				t.Fatal(err)
			}
			// The record mid-run: no board yet, each file cut inside a line
			// (requests before the journal, as they are written after a
			// generator's first entry).
			cut := map[string]float64{runrecord.EventsFile: 0.5, runrecord.JournalFile: 0.75, runrecord.RequestsFile: 0.33}
			whole := map[string][]byte{}
			for name, at := range cut {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				whole[name] = b
				if err := os.WriteFile(filepath.Join(dir, name), b[:int(float64(len(b))*at)], 0o644); err != nil {
					t.Fatal(err)
				}
			}
			board := filepath.Join(dir, runrecord.BoardFile)
			if err := os.Rename(board, board+".later"); err != nil {
				t.Fatal(err)
			}
			web := ui.NewServer(runs, nil)
			defer web.Close()
			ui.SetNow(web, now)
			srv := httptest.NewServer(web.Handler())
			defer srv.Close()
			same := func(stage string) {
				t.Helper()
				total := 1
				for from := 0; from < total; from += ui.PageTasks {
					want, err := ui.ViewPage(dir, from, now)
					if err != nil {
						t.Fatal(err)
					}
					wantJSON, _ := json.Marshal(want)
					got := fetch(t, srv.URL+"/api/runs/r1?from="+strconv.Itoa(from))
					if !bytes.Equal(got, wantJSON) {
						t.Fatalf("%s, from %d: the kept index's page differs (-ViewPage +server):\n%s", stage, from, cmp.Diff(string(wantJSON), string(got)))
					}
					total = max(want.TasksTotal, 1)
				}
			}
			same("mid-run")
			for name, b := range whole {
				f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Write(b[int(float64(len(b))*cut[name]):]); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			same("grown")
			if err := os.Rename(board+".later", board); err != nil {
				t.Fatal(err)
			}
			same("board written")
			// Replaced, as the writer does after each board run: a result
			// changed.
			b, err := os.ReadFile(board)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(board+".tmp", bytes.Replace(b, []byte(`"result":"`), []byte(`"result":"X`), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(board+".tmp", board); err != nil {
				t.Fatal(err)
			}
			same("board replaced")
			// A journal line spoiled in place is not read again by the kept
			// index, as a fetch that read the run again would.
			jpath := filepath.Join(dir, runrecord.JournalFile)
			j := whole[runrecord.JournalFile]
			at := bytes.Index(j, []byte(`{"gen":"task"`))
			end := at + bytes.IndexByte(j[at:], '\n')
			spoilt := append(append(append([]byte{}, j[:at]...), bytes.Repeat([]byte("x"), end-at)...), j[end:]...)
			f, err := os.OpenFile(jpath, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(spoilt[at:end], int64(at)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if _, err := ui.ViewPage(dir, 0, now); err == nil {
				t.Fatal("the spoilt line read as a journal line")
			}
			fetch(t, srv.URL+"/api/runs/r1?from="+strconv.Itoa(ui.PageTasks))
		})
	}
}

// fetch GETs url and fails unless it answers 200.
func fetch(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v: %s", url, resp.StatusCode, err, b)
	}
	return b
}

// G10: the server keeps at most four runs' indexes, and pages fetched at
// once, of one run or of several, are each the page of the record.
func TestServerIndexesBounded(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	done := exampleRun(t)
	runs := t.TempDir()
	const n = 7
	for i := range n {
		if err := os.CopyFS(filepath.Join(runs, "r"+strconv.Itoa(i)), os.DirFS(done)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]byte{}
	for i := range n {
		id := "r" + strconv.Itoa(i)
		v, err := ui.ViewPage(filepath.Join(runs, id), 0, now)
		if err != nil {
			t.Fatal(err)
		}
		want[id], _ = json.Marshal(v)
	}
	web := ui.NewServer(runs, nil)
	defer web.Close()
	ui.SetNow(web, now)
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()
	errs := make(chan error, 4*3*n)
	for g := range 4 {
		go func() {
			for k := range 3 * n {
				id := "r" + strconv.Itoa((g+k)%n)
				resp, err := http.Get(srv.URL + "/api/runs/" + id)
				if err != nil {
					errs <- err
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !bytes.Equal(b, want[id]) {
					errs <- fmt.Errorf("%s: %d, the page differs (-want +got):\n%s", id, resp.StatusCode, cmp.Diff(string(want[id]), string(b)))
					continue
				}
				errs <- nil
			}
		}()
	}
	for range 4 * 3 * n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if k := ui.Kept(web); k > 4 {
		t.Errorf("%d runs' indexes kept, want at most 4", k)
	}
}
