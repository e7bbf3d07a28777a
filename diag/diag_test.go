package diag

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDedupe(t *testing.T) {
	a := Errorf(Pos{File: "w.yaml", Line: 3, Col: 5}, "ref", "unknown task %q", "b")
	b := Warnf(Pos{File: "w.yaml", Line: 3, Col: 5}, "ref", "unknown task %q", "b") // same text, other severity
	c := Errorf(Pos{File: "s.yaml", Line: 1, Col: 1}, "schema", "missing id")
	for _, tt := range []struct {
		name     string
		in, want List
	}{
		{"empty", nil, List{}},
		{"adjacent", List{a, a, c}, List{a, c}},
		{"apart", List{a, c, a, c}, List{a, c}},
		{"near but not equal", List{a, b, a}, List{a, b}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := append(List(nil), tt.in...).Dedupe()
			if got == nil {
				got = List{}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Dedupe (-want +got):\n%s", d)
			}
		})
	}
}
