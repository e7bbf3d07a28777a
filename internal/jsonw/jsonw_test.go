package jsonw

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

func marshal(t testing.TB, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var texts = []string{"", "plain", `"quoted" \back\`, "<a href='x'>&amp;</a>", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"é ü 日本 🎉", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x82", "mixed <\u2028> \xc3"}

func TestString(t *testing.T) {
	for _, s := range texts {
		if got, want := string(String(nil, s)), marshal(t, s); got != want {
			t.Errorf("String(%q) = %s, json.Marshal %s", s, got, want)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range texts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(String(nil, s)), marshal(t, s); got != want {
			t.Errorf("String(%q) = %s, json.Marshal %s", s, got, want)
		}
	})
}

func TestFloat(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.1, 15.444, 1e-6, 9.99e-7, 1e-9, 1.5e-10, 1e20, 1e21, 1.234e300, -3.5e-8, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		if got, want := string(Float(nil, f)), marshal(t, f); got != want {
			t.Errorf("Float(%v) = %s, json.Marshal %s", f, got, want)
		}
	}
}

func TestTime(t *testing.T) {
	for _, tm := range []time.Time{time.Date(2026, 12, 2, 2, 17, 52, 349685420, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 6, 1, 12, 0, 0, 5, time.FixedZone("x", -7*3600))} {
		if got, want := string(Time(nil, tm)), marshal(t, tm); got != want {
			t.Errorf("Time(%v) = %s, json.Marshal %s", tm, got, want)
		}
	}
}

// TestTimeOK: TimeOK is true exactly for the times json.Marshal writes,
// at the edges of RFC 3339's years and zone offsets.
func TestTimeOK(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("e", 3600), time.FixedZone("w", -3600),
		time.FixedZone("24", 24*3600), time.FixedZone("-24", -24*3600), time.FixedZone("23:59", 24*3600-60)}
	edges := []time.Time{time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)}
	for _, edge := range edges {
		for _, d := range []time.Duration{-25 * time.Hour, -time.Hour, -time.Nanosecond, 0, time.Nanosecond, time.Hour, 25 * time.Hour} {
			for _, z := range zones {
				tm := edge.Add(d).In(z)
				_, err := json.Marshal(tm)
				if got := TimeOK(tm); got != (err == nil) {
					t.Errorf("TimeOK(%v) = %v; json.Marshal: %v", tm, got, err)
				}
			}
		}
	}
	if !TimeOK(time.Now()) || !TimeOK(time.Time{}) {
		t.Error("TimeOK refuses the clock's time or the zero time")
	}
}

type sample struct {
	Name  string            `json:"name"`
	Count int               `json:"count,omitempty"`
	Raw   json.RawMessage   `json:"raw,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
}

func appendSample(dst []byte, s *sample) []byte {
	dst = Key(append(dst, '{'), "name")
	dst = String(dst, s.Name)
	if s.Count != 0 {
		dst = Int(Key(dst, "count"), int64(s.Count))
	}
	if len(s.Raw) > 0 {
		dst = Value(Key(dst, "raw"), s.Raw)
	}
	if len(s.Tags) > 0 {
		dst = Value(Key(dst, "tags"), s.Tags)
	}
	return append(dst, '}')
}

// TestMatches: an appender that writes every field matches; one that
// forgets a field does not.
func TestMatches(t *testing.T) {
	if !Matches(appendSample) {
		t.Error("a faithful appender does not match")
	}
	forgets := func(dst []byte, s *sample) []byte {
		c := *s
		c.Tags = nil
		return appendSample(dst, &c)
	}
	if Matches(forgets) {
		t.Error("an appender that drops a field matches")
	}
}
