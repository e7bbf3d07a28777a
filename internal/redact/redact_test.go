package redact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
)

func TestSecrets(t *testing.T) {
	s := New("sk-abcdef123", "sk-abcdef", "ab", "1234567", "")
	if got, want := s.String("key sk-abcdef123 and sk-abcdef, ab, 1234567"), "key [REDACTED] and [REDACTED], ab, 1234567"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	err := s.Error(fmt.Errorf("auth sk-abcdef123 failed: %w", context.Canceled))
	if err.Error() != "auth [REDACTED] failed: context canceled" || !errors.Is(err, context.Canceled) {
		t.Errorf("Error = %v (Is canceled: %v)", err, errors.Is(err, context.Canceled))
	}
	if s.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
	if (Secrets{}).String("sk-abcdef123") != "sk-abcdef123" {
		t.Error("the zero Secrets masked something")
	}
}

// A secret is masked however the text around it was encoded: a key with
// & < > " in a JSON record, in a page, in a URL's query.
func TestSecretsInEveryForm(t *testing.T) {
	const key = `sk-a&b<c>d"e'f\g h`
	s := New(key)
	j, _ := json.Marshal(key)
	forms := map[string]string{
		"raw":        key,
		"JSON":       string(j[1 : len(j)-1]),
		"JSON plain": `sk-a&b<c>d\"e'f\\g h`,
		"HTML":       html.EscapeString(key),
		"URL query":  url.QueryEscape(key),
	}
	for name, f := range forms {
		if got := s.String("<" + f + ">"); got != "<"+Mask+">" {
			t.Errorf("%s form %q: masked as %q", name, f, got)
		}
	}
	doc, _ := json.Marshal(map[string]string{"out": "key=" + key})
	var back map[string]string
	if err := json.Unmarshal(s.Bytes(doc), &back); err != nil || back["out"] != "key="+Mask {
		t.Errorf("masked JSON %s reads %q (%v)", s.Bytes(doc), back["out"], err)
	}
}

func TestSet(t *testing.T) {
	var none *Set
	if none.String("sk-abcdef123") != "sk-abcdef123" || none.Error(nil) != nil {
		t.Error("a nil Set masked something")
	}
	s := NewSet("first-secret")
	s.Add("second-secret", "short")
	if got, want := s.String("first-secret second-secret short"), "[REDACTED] [REDACTED] short"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if n := s.Secrets().Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}
}

func TestFromEnv(t *testing.T) {
	got := FromEnv([]string{"OPENAI_API_KEY=k1", "gh_token=k2", "APP_SECRET=k3", "HOME=/root", "EMPTY_KEY=", "NOEQUALS"})
	if fmt.Sprint(got) != "[k1 k2 k3]" {
		t.Errorf("FromEnv = %q", got)
	}
}

// TestStream: a secret split across the pieces of a stream is masked,
// however it is cut; everything else comes through, in order, and what
// is held back comes with the next piece or at Flush.
func TestStream(t *testing.T) {
	const key = "sk-test-SECRET123"
	s := New(key)
	text := "a " + key + " b " + key + key + " sk-test-SEC c sk-test-SEC"
	want := s.String(text)
	for cut := 1; cut <= 7; cut++ {
		var got strings.Builder
		m := NewStream(s, func(p string) {
			if strings.Contains(got.String()+p, key) {
				t.Errorf("cut %d: the key came through (%q after %q)", cut, p, got.String())
			}
			got.WriteString(p)
		})
		for i := 0; i < len(text); i += cut {
			m.Write(text[i:min(i+cut, len(text))])
		}
		m.Flush()
		if got.String() != want {
			t.Errorf("cut %d: %q, want %q", cut, got.String(), want)
		}
	}
	// Dropped text is not handed on.
	var got []string
	m := NewStream(s, func(p string) { got = append(got, p) })
	m.Write("x sk-test")
	m.Drop()
	m.Write("y")
	m.Flush()
	if strings.Join(got, "|") != "x |y" {
		t.Errorf("after Drop: %q", got)
	}
}
