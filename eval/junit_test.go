package eval

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// xmlSuites is junitSuites named as its element, for encoding/xml.
type xmlSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	junitSuites
}

// encodingXML writes s as WriteJUnit wrote it with encoding/xml.
func encodingXML(t *testing.T, s junitSuites) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(xmlSuites{junitSuites: s}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// suitesOf builds suites whose every text field is text, in each shape
// the writer has: no suite, a suite without cases, a case with nothing
// inside, with a failure, an error, output, and all three.
func suitesOf(text string) []junitSuites {
	p := &junitProblem{Message: text, Type: text, Text: text}
	c := junitCase{Name: text, Classname: text, Time: text}
	full := c
	full.Failure, full.Error, full.SystemOut = p, p, text
	failed, errored, out := c, c, c
	failed.Failure, errored.Error, out.SystemOut = p, &junitProblem{}, text
	return []junitSuites{
		{Name: text},
		{Name: text, Tests: 3, Failures: 1, Errors: 1, Time: text, Suites: []junitSuite{{Name: text, Time: text}}},
		{Suites: []junitSuite{
			{Name: text, Tests: 5, Timestamp: text, Cases: []junitCase{c, failed, errored, out, full}},
			{Name: "cases", Cases: []junitCase{c}},
		}},
	}
}

var junitTexts = []string{"", "plain", `"quoted" & 'apos' <tag>`, "tab\tnew\nline\rcr", "\x00\x1f\x7f", "caf\xe9", "\uFFFD", "\U0001F600 \uD7FF \uE000 \uFFFE", "]]>"}

// TestJUnitXMLIsEncodingXMLs: the JUnit writer writes the bytes
// encoding/xml writes for the same suites (V8's format unchanged).
func TestJUnitXMLIsEncodingXMLs(t *testing.T) {
	for _, text := range junitTexts {
		for _, s := range suitesOf(text) {
			if got, want := string(s.appendXML([]byte(xmlHeader))), encodingXML(t, s); got != want {
				t.Errorf("text %q:\ngot\n%s\nencoding/xml\n%s", text, got, want)
			}
		}
	}
}

func FuzzJUnitXML(f *testing.F) {
	for _, text := range junitTexts {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, s := range suitesOf(text) {
			if got, want := string(s.appendXML([]byte(xmlHeader))), encodingXML(t, s); got != want {
				t.Errorf("text %q:\ngot\n%s\nencoding/xml\n%s", text, got, want)
			}
		}
	})
}

// An answer quoted as evidence is cut on a character, not inside one: a
// cut multi-byte character showed as "\xc3" in every format.
func TestQuoteAnswerCutsOnACharacter(t *testing.T) {
	got := quoteAnswer(strings.Repeat("a", 199) + "é and more")
	if strings.Contains(got, `\x`) || !strings.HasSuffix(got, `a…"`) {
		t.Errorf("quoteAnswer = %s", got)
	}
}
