package eval

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// The JUnit XML CI systems read, as Jenkins' xunit plugin's junit-10.xsd
// (github.com/jenkinsci/xunit-plugin, types/model/xsd/junit-10.xsd, the
// Surefire-compatible schema) defines it: testsuites > testsuite (name,
// tests, failures and errors required) > testcase (name required) with
// failure, error and system-out children.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
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
			case !cs.Passed && runErrors(cs.Runs) != "" && cs.PassRate == 0:
				c.Error = &junitProblem{Message: "the runs failed", Type: "run", Text: strings.Join(why, "\n")}
			case !cs.Passed:
				c.Failure = &junitProblem{Message: fmt.Sprintf("%s of the runs passed; want %s", num(cs.PassRate), num(r.Totals.Threshold)),
					Type: "assertion", Text: strings.Join(why, "\n")}
			}
			s.add(c)
		}
		out.add(s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
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
