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

// json-path's equals compares numbers exactly: through float64, ids past
// 2^53 that differ compared equal, and a wrong id passed.
func TestSameJSONNumbersExactly(t *testing.T) {
	got, err := jsonPath(`{"id": 9007199254740992, "n": 3.0, "list": [1, {"x": 2}]}`, "$.id")
	if err != nil {
		t.Fatal(err)
	}
	if sameJSON(got, 9007199254740993) {
		t.Error("9007199254740992 equals 9007199254740993")
	}
	if !sameJSON(got, 9007199254740992) {
		t.Error("9007199254740992 does not equal itself")
	}
	n, _ := jsonPath(`{"n": 3.0}`, "$.n")
	list, _ := jsonPath(`{"list": [1, {"x": 2.50}]}`, "$.list")
	if !sameJSON(n, 3) || !sameJSON(list, []any{1, map[string]any{"x": 2.5}}) || sameJSON(list, []any{1, map[string]any{"x": 2}}) {
		t.Error("numbers written differently compare unequal, or different ones equal")
	}
}

// tool-called's args compare numbers exactly too.
func TestArgsMatchNumbersExactly(t *testing.T) {
	if argsMatch([]byte(`{"id": 9007199254740993}`), map[string]any{"id": 9007199254740992}) {
		t.Error("a call with id 9007199254740993 matches id 9007199254740992")
	}
	if !argsMatch([]byte(`{"id": 7.0, "x": 1}`), map[string]any{"id": 7}) {
		t.Error("a call with id 7.0 does not match id 7")
	}
}
