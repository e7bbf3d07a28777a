package eval

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The JUnit XML CI systems read, as Jenkins' xunit plugin's junit-10.xsd
// (github.com/jenkinsci/xunit-plugin, types/model/xsd/junit-10.xsd, the
// Surefire-compatible schema) defines it: testsuites > testsuite (name,
// tests, failures and errors required) > testcase (name required) with
// failure, error and system-out children. The tags say how
// encoding/xml would write them, which appendXML does byte for byte
// (TestJUnitXMLIsEncodingXMLs) without linking encoding/xml, whose
// initialisation every fsd process would run.
type junitSuites struct {
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML: a test suite of trigger
// cases and one of outcome cases, a test case each; a case below its
// threshold is a failure, a case whose runs could not run an error;
// valid under junit-10.xsd (V8).
func (r *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{Name: "fsd eval", Time: seconds(r.Elapsed)}
	stamp := r.Started.Format("2006-01-02T15:04:05")
	if len(r.Triggers) > 0 {
		s := junitSuite{Name: "triggers", Timestamp: stamp}
		for _, t := range r.Triggers {
			c := junitCase{Name: t.ID + " " + clipQuery(t.Query), Classname: "fsd.eval.trigger." + t.Skill, Time: seconds(runsTime(t.Runs))}
			if errs := runErrors(t.Runs); errs != "" {
				c.Error = &junitProblem{Message: "a run failed", Type: "run", Text: errs}
			} else if !t.Passed {
				d := r.Failures()
				msg := ""
				for _, x := range d {
					if strings.HasPrefix(x.Message, "trigger case "+t.ID+":") {
						msg = x.Message
					}
				}
				c.Failure = &junitProblem{Message: msg, Type: "trigger", Text: readsOf(t)}
			}
			c.SystemOut = fmt.Sprintf("query: %s\nrate: %s\n%s\n", t.Query, rate(t.Rate, t.Runs), readsOf(t))
			s.add(c)
		}
		out.add(s)
	}
	if len(r.Cases) > 0 {
		s := junitSuite{Name: "cases", Timestamp: stamp}
		for _, cs := range r.Cases {
			c := junitCase{Name: cs.ID, Classname: "fsd.eval.case", Time: seconds(runsTime(cs.Runs))}
			var why []string
			for _, run := range cs.Runs {
				for _, f := range failures(run) {
					why = append(why, fmt.Sprintf("run %d: %s", run.Repeat+1, f))
				}
			}
			switch {
			case runErrors(cs.Runs) != "": // as a trigger case's: a run could not run
				c.Error = &junitProblem{Message: "the runs failed", Type: "run", Text: strings.Join(why, "\n")}
			case !cs.Passed:
				c.Failure = &junitProblem{Message: fmt.Sprintf("%s of the runs passed; want %s", num(cs.PassRate), num(cs.Threshold)),
					Type: "assertion", Text: strings.Join(why, "\n")}
			}
			s.add(c)
		}
		out.add(s)
	}
	_, err := w.Write(append(out.appendXML([]byte(xmlHeader)), '\n'))
	return err
}

// xmlHeader is encoding/xml's Header.
const xmlHeader = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

// appendXML appends the suites as encoding/xml's Encoder writes them
// indented by two spaces (I7): an element on a line of its own, its end tag on
// the same line when it holds no element (text, or nothing).
func (s *junitSuites) appendXML(b []byte) []byte {
	b = append(b, "<testsuites"...)
	b = appendCounts(b, s.Name, s.Tests, s.Failures, s.Errors, s.Time)
	b = append(b, '>')
	for _, x := range s.Suites {
		b = append(b, "\n  <testsuite"...)
		b = appendCounts(b, x.Name, x.Tests, x.Failures, x.Errors, x.Time)
		if x.Timestamp != "" {
			b = appendAttr(b, "timestamp", x.Timestamp)
		}
		b = append(b, '>')
		for _, c := range x.Cases {
			b = append(b, "\n    <testcase"...)
			b = appendAttr(b, "name", c.Name)
			b = appendAttr(b, "classname", c.Classname)
			b = appendAttr(b, "time", c.Time)
			b = append(b, '>')
			inner := false
			for _, p := range []struct {
				tag string
				p   *junitProblem
			}{{"failure", c.Failure}, {"error", c.Error}} {
				if p.p == nil {
					continue
				}
				b = append(b, "\n      <"+p.tag...)
				b = appendAttr(b, "message", p.p.Message)
				b = appendAttr(b, "type", p.p.Type)
				b = append(b, '>')
				b = appendEscaped(b, p.p.Text)
				b = append(b, "</"+p.tag+">"...)
				inner = true
			}
			if c.SystemOut != "" {
				b = append(b, "\n      <system-out>"...)
				b = appendEscaped(b, c.SystemOut)
				b = append(b, "</system-out>"...)
				inner = true
			}
			if inner {
				b = append(b, "\n    "...)
			}
			b = append(b, "</testcase>"...)
		}
		if len(x.Cases) > 0 {
			b = append(b, "\n  "...)
		}
		b = append(b, "</testsuite>"...)
	}
	if len(s.Suites) > 0 {
		b = append(b, '\n')
	}
	return append(b, "</testsuites>"...)
}

func appendCounts(b []byte, name string, tests, failures, errors int, time string) []byte {
	b = appendAttr(b, "name", name)
	b = appendAttr(b, "tests", strconv.Itoa(tests))
	b = appendAttr(b, "failures", strconv.Itoa(failures))
	b = appendAttr(b, "errors", strconv.Itoa(errors))
	return appendAttr(b, "time", time)
}

func appendAttr(b []byte, name, value string) []byte {
	b = append(b, ' ')
	b = append(b, name...)
	b = append(b, `="`...)
	b = appendEscaped(b, value)
	return append(b, '"')
}

// appendEscaped escapes text as encoding/xml does in attributes and
// character data alike: the five markup characters, tab and line ends
// as character references, and a rune XML cannot hold (or a byte that is
// not UTF-8) as U+FFFD.
func appendEscaped(b []byte, s string) []byte {
	last := 0
	for i := 0; i < len(s); {
		r, width := utf8.DecodeRuneInString(s[i:])
		i += width
		var esc string
		switch r {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if !xmlChar(r) || (r == utf8.RuneError && width == 1) {
				esc = "\uFFFD"
				break
			}
			continue
		}
		b = append(b, s[last:i-width]...)
		b = append(b, esc...)
		last = i
	}
	return append(b, s[last:]...)
}

// xmlChar reports whether XML 1.0 allows r in a document (its Char
// production).
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

func (s *junitSuite) add(c junitCase) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	switch {
	case c.Error != nil:
		s.Errors++
	case c.Failure != nil:
		s.Failures++
	}
}

func (s *junitSuites) add(x junitSuite) {
	var ms float64
	for _, c := range x.Cases {
		var f float64
		fmt.Sscanf(c.Time, "%f", &f)
		ms += f * 1000
	}
	x.Time = seconds(ms)
	s.Suites = append(s.Suites, x)
	s.Tests += x.Tests
	s.Failures += x.Failures
	s.Errors += x.Errors
}

func runsTime(runs []RunResult) float64 {
	var ms float64
	for _, r := range runs {
		ms += r.Elapsed
	}
	return ms
}

func runErrors(runs []RunResult) string {
	var out []string
	for _, r := range runs {
		if r.Error != "" {
			out = append(out, fmt.Sprintf("run %d: %s", r.Repeat+1, r.Error))
		}
	}
	return strings.Join(out, "\n")
}

// seconds is milliseconds as Surefire's time: seconds, a point and
// three decimals.
func seconds(ms float64) string { return fmt.Sprintf("%.3f", ms/1000) }
