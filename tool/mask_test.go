package tool

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fsdrun/fsd/internal/redact"
)

// A secret the output caps would split — stdout's end at MaxOutputBytes,
// the start of stderr's kept tail — is masked whole before the cut, so no
// part of it is left.
func TestMaskedBeforeTheCut(t *testing.T) {
	const key = "cut-5ecret-0123456789abcdef"
	script := fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; printf %%s "$CUT_KEY"; head -c 100 /dev/zero | tr '\0' y
printf %%s "$CUT_KEY" >&2; head -c %d /dev/zero | tr '\0' z >&2; exit 1`, MaxOutputBytes-5, StderrTail-8)
	spt := command("sh", "-c", script)
	spt.Run.Env = []string{"CUT_KEY"}
	tl, err := Compile(spt, t.TempDir(), WithMask(redact.NewSet(key).String),
		WithLookupEnv(func(k string) (string, bool) {
			if k == "CUT_KEY" {
				return key, true
			}
			return "", false
		}))
	if err != nil {
		t.Fatal(err)
	}
	got := tl.Call(context.Background(), nil, nil)
	if !got.IsError || !got.Truncated || !strings.Contains(got.Text, "[output truncated at 1 MiB]") {
		t.Fatalf("want a failure with stdout cut: %+v", got.Text[:min(len(got.Text), 200)])
	}
	// Any 5 bytes of the key in a row would be part of it left by a cut.
	for i := 0; i+5 <= len(key); i++ {
		if strings.Contains(got.Text, key[i:i+5]) {
			t.Fatalf("part of the key, %q, is in the result", key[i:i+5])
		}
	}
	if _, tail, _ := strings.Cut(got.Text, "stderr (last 4 KiB):\n"); !strings.HasPrefix(tail, "EDACTED]zzz") {
		t.Errorf("stderr's kept tail starts %q, want the end of the masked key", tail[:min(len(tail), 20)])
	}
}

// Output full of a secret shrinks when masked: the cut of what is kept
// must still fall where no part of a secret is left — not inside the
// spare bytes kept past the cap, whose end (stdout) or start (stderr's
// tail) splits a secret that masking cannot recognise.
func TestMaskedOutputFullOfSecrets(t *testing.T) {
	const key = "cut-5ecret-0123456789abcdef"
	// Each line is the key and a newline: 1 MiB and 4 KiB of lines end
	// inside a key, and masking shrinks every line from 28 bytes to 11.
	script := `yes "$CUT_KEY" | head -c 3000000; yes "$CUT_KEY" | head -c 300000 >&2; exit 1`
	spt := command("sh", "-c", script)
	spt.Run.Env = []string{"CUT_KEY"}
	tl, err := Compile(spt, t.TempDir(), WithMask(redact.NewSet(key).String),
		WithLookupEnv(func(k string) (string, bool) {
			if k == "CUT_KEY" {
				return key, true
			}
			return "", false
		}))
	if err != nil {
		t.Fatal(err)
	}
	got := tl.Call(context.Background(), nil, nil)
	if !got.IsError || !got.Truncated {
		t.Fatalf("want a failure with stdout cut: %+v", got.Text[:min(len(got.Text), 200)])
	}
	for i := 0; i+5 <= len(key); i++ {
		if strings.Contains(got.Text, key[i:i+5]) {
			t.Fatalf("part of the key, %q, is in the result", key[i:i+5])
		}
	}
}
