package journal

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRepairTail(t *testing.T) {
	long := `{"seq":2,"text":"` + strings.Repeat("x", 200<<10) + `"}`
	for _, tt := range []struct {
		name, in, want string
		repair         Repair
	}{
		{"empty", "", "", Repair{}},
		{"whole", "{\"a\":1}\n{\"a\":2}\n", "{\"a\":1}\n{\"a\":2}\n", Repair{}},
		{"torn", "{\"a\":1}\n{\"a\":", "{\"a\":1}\n", Repair{Cut: 5}},
		{"only a torn line", "{\"a\":", "", Repair{Cut: 5}},
		{"newline missing", "{\"a\":1}\n{\"a\":2}", "{\"a\":1}\n{\"a\":2}\n", Repair{Completed: true}},
		{"blank tail", "{\"a\":1}\n  ", "{\"a\":1}\n", Repair{Cut: 2}},
		{"long torn line", "{\"a\":1}\n" + long[:len(long)-3], "{\"a\":1}\n", Repair{Cut: int64(len(long) - 3)}},
		{"long whole line", "{\"a\":1}\n" + long, "{\"a\":1}\n" + long + "\n", Repair{Completed: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.jsonl")
			if err := os.WriteFile(path, []byte(tt.in), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := RepairTail(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.repair {
				t.Errorf("repair = %+v, want %+v", got, tt.repair)
			}
			b, _ := os.ReadFile(path)
			if string(b) != tt.want {
				t.Errorf("file = %.80q…, want %.80q…", b, tt.want)
			}
		})
	}
	if r, err := RepairTail(filepath.Join(t.TempDir(), "missing")); err != nil || r.Changed() {
		t.Errorf("missing file: %+v, %v", r, err)
	}
}

func TestLockIsExclusive(t *testing.T) {
	dir := t.TempDir()
	l, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := Lock(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	l2.Unlock()
}

func TestDiff(t *testing.T) {
	rec := Digests{"workflow": "1", "script s.yaml": "2", "skill a (a.skill.yaml)": "3"}
	now := Digests{"workflow": "1", "script s.yaml": "9", "skill b (b.skill.yaml)": "4"}
	want := []string{"script s.yaml changed", "skill a (a.skill.yaml) is gone", "skill b (b.skill.yaml) is new"}
	if d := cmp.Diff(want, Diff(rec, now)); d != "" {
		t.Error(d)
	}
	if got := Diff(rec, rec); got != nil {
		t.Errorf("same digests: %v", got)
	}
	if got := Diff(nil, now); got != nil {
		t.Errorf("an old record without digests: %v", got)
	}
}

func TestPlan(t *testing.T) {
	for _, tt := range []struct {
		c    Call
		want Action
	}{
		{Call{}, Execute},
		{Call{Result: true}, Execute},
		{Call{Command: true, Result: true}, UseJournal},
		{Call{Command: true, Result: true, FailsInDoubt: true}, UseJournal},
		{Call{Command: true}, Retry},
		{Call{Command: true, FailsInDoubt: true}, FailInDoubt},
	} {
		if got := Plan(tt.c); got != tt.want {
			t.Errorf("Plan(%+v) = %v, want %v", tt.c, got, tt.want)
		}
	}
}
