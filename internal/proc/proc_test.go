package proc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/internal/proctest"
)

func TestEnviron(t *testing.T) {
	vars := map[string]string{"PATH": "/bin", "HOME": "/home/ada", "TOKEN": "t0k", "FSD_RUN_ID": "declared", "SECRET": "s3"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for _, tt := range []struct {
		name       string
		names, set []string
		want       []string
	}{
		{"minimal", nil, nil, []string{"PATH=/bin", "HOME=/home/ada"}},
		{"declared", []string{"TOKEN"}, nil, []string{"PATH=/bin", "HOME=/home/ada", "TOKEN=t0k"}},
		{"declared but unset", []string{"NOPE"}, nil, []string{"PATH=/bin", "HOME=/home/ada"}},
		{"declared twice", []string{"TOKEN", "PATH", "TOKEN"}, nil, []string{"PATH=/bin", "HOME=/home/ada", "TOKEN=t0k"}},
		{"set wins over declared", []string{"FSD_RUN_ID"}, []string{"FSD_RUN_ID=r1", "FSD_CALL_ID=c1"},
			[]string{"FSD_RUN_ID=r1", "FSD_CALL_ID=c1", "PATH=/bin", "HOME=/home/ada"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, Environ(lookup, tt.names, tt.set...)); d != "" {
				t.Errorf("Environ (-want +got):\n%s", d)
			}
		})
	}
}

// The program sees its environment and nothing of fsd's; a relative
// program is the skill's, run from the working folder asked for.
func TestCommandEnvironmentAndFolders(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh script")
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\npwd\nexec env\n"
	if err := os.WriteFile(filepath.Join(root, "bin", "show"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FSD_PROC_TEST_SECRET", "leaked")
	vars := map[string]string{"PATH": os.Getenv("PATH"), "HOME": "/home/ada", "TOKEN": "t0k"}
	cmd, err := Command(context.Background(), Program{
		Argv: []string{"./bin/show"}, Root: root, Dir: filepath.Join(root, "work"),
		Env: []string{"TOKEN"}, Set: []string{"FSD_CALL_ID=c1"},
		LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
	})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := Run(cmd, &out, &errOut); err != nil {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if real, _ := filepath.EvalSymlinks(filepath.Join(root, "work")); lines[0] != real && lines[0] != filepath.Join(root, "work") {
		t.Errorf("ran in %s, want %s", lines[0], filepath.Join(root, "work"))
	}
	var got []string
	for _, l := range lines[1:] {
		// sh adds PWD (and some shells SHLVL, _) before exec: not fsd's.
		if k, _, _ := strings.Cut(l, "="); k != "PWD" && k != "SHLVL" && k != "_" && k != "OLDPWD" {
			got = append(got, l)
		}
	}
	slices.Sort(got)
	want := []string{"FSD_CALL_ID=c1", "HOME=/home/ada", "PATH=" + os.Getenv("PATH"), "TOKEN=t0k"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("environment (-want +got):\n%s", d)
	}
}

func TestTail(t *testing.T) {
	for _, tt := range []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"short", 8, []string{"abc", "def"}, "abcdef"},
		{"exactly max", 4, []string{"abcd"}, "abcd"},
		{"the end is kept", 4, []string{"abcdefgh", "ij"}, "ghij"},
		{"many small writes", 3, strings.Split("abcdefghijklmnop", ""), "nop"},
		{"not from half a character", 4, []string{"xxé€"}, "€"}, // é€ is 5 bytes: the last 4 start inside é
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := NewTail(tt.max)
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := w.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// A running server's stderr is written while a failed call reads it.
func TestTailConcurrent(t *testing.T) {
	w := NewTail(16)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, _ = w.Write([]byte("line\n"))
				_ = w.String()
			}
		})
	}
	wg.Wait()
	if got := w.String(); len(got) != 16 {
		t.Errorf("kept %d bytes, want 16", len(got))
	}
}

// A program started for a traced call gets the call's W3C trace context
// as TRACEPARENT (and TRACESTATE): a script that traces its work joins
// the call's span. An untraced call gives it none.
func TestCommandTraceParent(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh script")
	}
	traced, parent, state := proctest.Traced()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"traced", traced, parent + " " + state},
		{"untraced", context.Background(), " "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd, err := Command(tt.ctx, Program{Argv: []string{"/bin/sh", "-c", `echo "$TRACEPARENT $TRACESTATE"`}, Root: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := Run(cmd, &out, &out); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSuffix(out.String(), "\n"); got != tt.want {
				t.Errorf("the program saw %q, want %q", got, tt.want)
			}
		})
	}
}
