package diag

import "testing"

func TestSuggest(t *testing.T) {
	known := []string{"openai", "anthropic", "max-steps", "description"}
	synonyms := map[string]string{"claude": "anthropic"}
	for name, want := range map[string]string{
		"antropic": "anthropic", "OpenAI": "openai", "max_steps": "max-steps", "desc": "description",
		"claude": "anthropic", "gemini": "", "ai": "",
	} {
		if got := Suggest(name, known, synonyms); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", name, got, want)
		}
	}
	if got, want := DidYouMean("opneai", known, nil), `did you mean "openai"?`; got != want {
		t.Errorf("DidYouMean = %q, want %q", got, want)
	}
}
