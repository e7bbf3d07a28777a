package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/fsdrun/fsd/internal/lazyre"
	"github.com/fsdrun/fsd/output"
	"github.com/fsdrun/fsd/spec"
)

// check runs a case's assertions on one finished run. Judge assertions
// call judge; their usage and cost are added to r's (V4).
func check(ctx context.Context, j Job, r *RunResult, calls []call, judge *judge, prices map[string]spec.Price) []AssertionResult {
	out := make([]AssertionResult, 0, len(j.Case.Expect))
	// The bounds are checked after every judge has run: the judge's
	// tokens and cost count in the case's.
	var bounds []spec.Assertion
	for _, a := range j.Case.Expect {
		switch a.Kind {
		case spec.AssertMaxTokens, spec.AssertMaxCost:
			bounds = append(bounds, a)
			continue
		case spec.AssertJudge:
			v, usage, cost, err := judge.grade(ctx, a.Text, r.Answer, j.Case.Expected, prices)
			r.Usage, r.Cost = r.Usage.Add(usage), r.Cost+cost
			res := AssertionResult{Assertion: a.String(), Passed: err == nil && v.Passed, Evidence: v.Evidence}
			if err != nil {
				res.Evidence = "the judge failed: " + firstLine(err.Error())
			}
			out = append(out, res)
			continue
		}
		out = append(out, assert(a, r, calls))
	}
	for _, a := range bounds {
		out = append(out, assert(a, r, calls))
	}
	return out
}

// assert checks one assertion that needs no model.
func assert(a spec.Assertion, r *RunResult, calls []call) AssertionResult {
	res := AssertionResult{Assertion: a.String()}
	answer := r.Answer
	switch a.Kind {
	case spec.AssertContains:
		res.Passed = strings.Contains(answer, a.Text)
		res.Evidence = quoteAnswer(answer)
	case spec.AssertEquals:
		res.Passed = strings.TrimSpace(answer) == strings.TrimSpace(a.Text)
		res.Evidence = quoteAnswer(answer)
	case spec.AssertRegex:
		re, err := regexp.Compile(a.Text)
		res.Passed = err == nil && re.MatchString(answer)
		res.Evidence = quoteAnswer(answer)
	case spec.AssertJSONSchema:
		s, err := output.Compile("json-schema", a.Schema)
		if err != nil {
			res.Evidence = err.Error()
			break
		}
		_, problems := s.Check(answer)
		res.Passed = problems == nil
		res.Evidence = strings.Join(problems, "; ")
	case spec.AssertJSONPath:
		got, err := jsonPath(output.Unfence(answer), a.Path)
		if err != nil {
			res.Evidence = err.Error()
			break
		}
		res.Passed = sameJSON(got, a.Value)
		b, _ := json.Marshal(got)
		res.Evidence = fmt.Sprintf("%s is %s", a.Path, b)
	case spec.AssertToolCalled, spec.AssertToolNotCalled:
		n := 0
		for _, c := range calls {
			if c.name == a.Text && argsMatch(c.args, a.Args) {
				n++
			}
		}
		res.Passed = (n > 0) == (a.Kind == spec.AssertToolCalled)
		res.Evidence = fmt.Sprintf("%d matching calls", n)
	case spec.AssertSkillRead, spec.AssertSkillNotRead:
		read := contains(r.Reads, a.Text)
		res.Passed = read == (a.Kind == spec.AssertSkillRead)
		res.Evidence = "reads: " + strings.Join(r.Reads, ", ")
		if len(r.Reads) == 0 {
			res.Evidence = "no skill was read"
		}
	case spec.AssertMaxTokens:
		n := r.Usage.InputTokens + r.Usage.OutputTokens
		res.Passed = float64(n) <= a.Limit
		res.Evidence = fmt.Sprintf("%d tokens", n)
		if r.Usage.Estimated {
			res.Evidence += " (estimated)"
		}
	case spec.AssertMaxCost:
		res.Passed = r.Cost <= a.Limit
		res.Evidence = "cost " + strconv.FormatFloat(r.Cost, 'f', -1, 64)
	case spec.AssertMaxSteps:
		res.Passed = float64(r.Steps) <= a.Limit
		res.Evidence = fmt.Sprintf("%d steps", r.Steps)
	default:
		res.Evidence = "unknown assertion kind " + a.Kind
	}
	return res
}

// quoteAnswer is an answer as evidence: quoted, cut to one short line.
func quoteAnswer(s string) string {
	const max = 200
	if len(s) > max {
		n := max
		for n > 0 && !utf8.RuneStart(s[n]) {
			n-- // cut before a character, not inside one
		}
		s = s[:n] + "…"
	}
	return "the answer is " + strconv.Quote(s)
}

// argsMatch: every argument want names is in the call with an equal
// value; extra arguments do not matter.
func argsMatch(got json.RawMessage, want map[string]any) bool {
	if len(want) == 0 {
		return true
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(got))
	dec.UseNumber() // exact numbers, as sameJSON compares them
	if err := dec.Decode(&m); err != nil {
		return false
	}
	for k, v := range want {
		g, ok := m[k]
		if !ok || !sameJSON(g, v) {
			return false
		}
	}
	return true
}

// sameJSON compares two values as JSON (YAML's ints and JSON's floats
// alike). Numbers compare by exact value, not as float64: through
// float64, integers past 2^53 that differ were equal.
func sameJSON(a, b any) bool {
	norm := func(v any) any {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var out any
		_ = dec.Decode(&out)
		return out
	}
	return sameValue(norm(a), norm(b))
}

// sameValue is reflect.DeepEqual for decoded JSON whose numbers are
// json.Number, compared as exact rationals (3 and 3.0 alike).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		p, okp := new(big.Rat).SetString(x.String())
		q, okq := new(big.Rat).SetString(y.String())
		return okp && okq && p.Cmp(q) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

var pathStep = lazyre.New(`\.([^.\[\]]+)|\[([0-9]+)\]`)

// jsonPath finds the value at path ($ then .key and [index] steps) in
// the JSON text.
func jsonPath(text, path string) (any, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %v", err)
	}
	at := "$"
	for _, m := range pathStep().FindAllStringSubmatch(strings.TrimPrefix(path, "$"), -1) {
		switch {
		case m[1] != "":
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s is not an object", at)
			}
			if v, ok = obj[m[1]]; !ok {
				return nil, fmt.Errorf("%s has no key %q", at, m[1])
			}
			at += "." + m[1]
		default:
			i, _ := strconv.Atoi(m[2])
			arr, ok := v.([]any)
			if !ok || i >= len(arr) {
				return nil, fmt.Errorf("%s has no item %d", at, i)
			}
			v = arr[i]
			at += "[" + m[2] + "]"
		}
	}
	return v, nil
}
