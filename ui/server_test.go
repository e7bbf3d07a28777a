package ui_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/runrecord"
	"github.com/fsdrun/fsd/ui"
)

// Every response and the report mask the planted key; ids that name no
// run folder under the runs dir get 404; the live stream ends with "done" for a finished run.
func TestServerMasksSecretsAndRefusesPaths(t *testing.T) {
	runs := t.TempDir()
	if _, done := startExample(t, runs, "r1", example{}); <-done != nil {
		t.Fatal("the example failed")
	}
	srv := httptest.NewServer(ui.NewServer(runs, []string{secret}).Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/", "/api/runs", "/api/runs/r1", "/run/r1", "/assets/app.js", "/api/runs/r1/live"} {
		code, body := get(path)
		if code != http.StatusOK {
			t.Errorf("%s: %d", path, code)
		}
		if strings.Contains(body, secret) {
			t.Errorf("%s shows the planted key", path)
		}
		if path == "/api/runs/r1" && !strings.Contains(body, "[REDACTED]") {
			t.Errorf("%s: the input's key is not masked", path)
		}
		if path == "/api/runs/r1/live" && !strings.Contains(body, "event: done") {
			t.Errorf("live stream of a finished run: %q", body)
		}
	}
	// Part of an id is enough, as on the command line; the page then asks
	// for the run it found.
	if code, body := get("/run/1"); code != http.StatusOK || !strings.Contains(body, `data-run="r1"`) {
		t.Errorf("/run/1: %d, want the page of r1:\n%s", code, body)
	}
	for _, path := range []string{"/api/runs/..", "/api/runs/nope", "/run/nope", "/api/runs/%2e%2e%2fr1"} {
		if code, _ := get(path); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, code)
		}
	}
	rec, err := runrecord.Open(filepath.Join(runs, "r1"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ui.Report(&buf, rec, []string{secret}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), secret) || !strings.Contains(buf.String(), "window.FSD_DATA") {
		t.Error("report: key shown or data missing")
	}
}

// A key with characters JSON and HTML escape is masked in what the server
// sends and in the report, however they spell it: the record holds it
// raw (it came in the run's input, which is no tool's output).
//
// S3: masked in the form the page or the JSON spells it.
func TestServerMasksEscapedSecrets(t *testing.T) {
	const core = "5ecret-fedcba9876543210"
	const key = `sk-ui-&<planted>"` + core
	runs := t.TempDir()
	if _, done := startExample(t, runs, "r2", example{key: key}); <-done != nil {
		t.Fatal("the example failed")
	}
	raw, err := os.ReadFile(filepath.Join(runs, "r2", runrecord.JournalFile))
	if err != nil || !strings.Contains(string(raw), core) {
		t.Fatalf("the record should hold the planted key for the server to mask (%v)", err)
	}
	srv := httptest.NewServer(ui.NewServer(runs, []string{key}).Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/runs/r2")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rec, err := runrecord.Open(filepath.Join(runs, "r2"))
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	if err := ui.Report(&page, rec, []string{key}); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"/api/runs/r2": string(body), "the report": page.String()} {
		if strings.Contains(text, core) {
			i := strings.Index(text, core)
			t.Errorf("%s shows the key: …%s…", name, text[max(i-40, 0):min(i+len(core)+10, len(text))])
		}
		if !strings.Contains(text, "[REDACTED]") {
			t.Errorf("%s: the input's key is not masked", name)
		}
	}
}

// Browsers ask for /favicon.ico on their own; it is served, not a 404.
func TestServerServesAFavicon(t *testing.T) {
	srv := httptest.NewServer(ui.NewServer(t.TempDir(), nil).Handler())
	defer srv.Close()
	for _, path := range []string{"/favicon.ico", "/assets/favicon.svg"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(string(body), "<svg") {
			t.Errorf("%s: %d %s %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
}
