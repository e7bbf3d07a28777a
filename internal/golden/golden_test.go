package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTB records failures instead of failing the real test; Fatalf stops
// the checked call the way testing.T does, by leaving the goroutine.
type fakeTB struct {
	testing.TB
	msgs  []string
	fatal bool
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return "TestPage/sub" }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.fatal = true
	panic(f)
}
func (f *fakeTB) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

func check(path, got string) (f *fakeTB) {
	f = &fakeTB{}
	defer func() {
		if r := recover(); r != nil && r != f {
			panic(r)
		}
	}()
	CheckString(f, path, got)
	return f
}

func TestCheck(t *testing.T) {
	if *Update {
		t.Skip("compares without -update")
	}
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, got string
		fatal           bool
		want            string // substring of the one message, "" for none
	}{
		{"equal", path, "a\nb\n", false, ""},
		{"differs", path, "a\nc\n", false, path + " mismatch (-want +got)"},
		{"says how to rewrite", path, "a\nc\n", false, "go test ./internal/golden -run '^TestPage$' -update rewrites it"},
		{"missing", path + ".nope", "a\n", true, "go test ./internal/golden -run '^TestPage$' -update creates it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := check(tt.path, tt.got)
			if f.fatal != tt.fatal {
				t.Errorf("fatal = %v, want %v", f.fatal, tt.fatal)
			}
			switch {
			case tt.want == "" && len(f.msgs) != 0:
				t.Errorf("unexpected failure: %q", f.msgs)
			case tt.want != "" && (len(f.msgs) != 1 || !strings.Contains(f.msgs[0], tt.want)):
				t.Errorf("messages %q, want one containing %q", f.msgs, tt.want)
			}
		})
	}
}

func TestUpdateWrites(t *testing.T) {
	defer func(old bool) { *Update = old }(*Update)
	*Update = true
	path := filepath.Join(t.TempDir(), "new", "dir", "x.golden")
	if f := check(path, "fresh\n"); len(f.msgs) != 0 {
		t.Fatalf("update failed: %q", f.msgs)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "fresh\n" {
		t.Errorf("wrote %q, %v; want %q", got, err, "fresh\n")
	}
}
