package tmpl

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
)

// builtins are text/template's functions that make sense over JSON data.
// and and or are evaluated lazily by the evaluator; they are listed so the
// parser knows them.
var builtins = map[string]Func{
	"and":      func(...any) (any, error) { return nil, nil },
	"or":       func(...any) (any, error) { return nil, nil },
	"not":      fixed(1, func(a []any) (any, error) { return !truth(a[0]), nil }),
	"len":      fixed(1, length),
	"index":    index,
	"print":    func(a ...any) (any, error) { return fmt.Sprint(plain(a)...), nil },
	"println":  func(a ...any) (any, error) { return fmt.Sprintln(plain(a)...), nil },
	"printf":   printf,
	"eq":       eq,
	"ne":       fixed(2, func(a []any) (any, error) { e, err := equal(a[0], a[1]); return !e, err }),
	"lt":       fixed(2, func(a []any) (any, error) { c, err := compare(a[0], a[1]); return c < 0, err }),
	"le":       fixed(2, func(a []any) (any, error) { c, err := compare(a[0], a[1]); return c <= 0, err }),
	"gt":       fixed(2, func(a []any) (any, error) { c, err := compare(a[0], a[1]); return c > 0, err }),
	"ge":       fixed(2, func(a []any) (any, error) { c, err := compare(a[0], a[1]); return c >= 0, err }),
	"urlquery": func(a ...any) (any, error) { return url.QueryEscape(fmt.Sprint(plain(a)...)), nil },
}

func fixed(n int, f func([]any) (any, error)) Func {
	return func(a ...any) (any, error) {
		if len(a) != n {
			return nil, fmt.Errorf("wrong number of args: want %d, got %d", n, len(a))
		}
		return f(a)
	}
}

// plain turns JSON numbers into Go numbers so fmt verbs treat them as
// numbers.
func plain(a []any) []any {
	out := make([]any, len(a))
	for i, v := range a {
		if n, ok := v.(json.Number); ok {
			if n, err := n.Int64(); err == nil {
				out[i] = n
				continue
			}
			if f, err := n.Float64(); err == nil {
				out[i] = f
				continue
			}
		}
		out[i] = v
	}
	return out
}

func printf(a ...any) (any, error) {
	if len(a) == 0 {
		return nil, fmt.Errorf("wrong number of args: want at least 1, got 0")
	}
	format, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("the format is %s, not a string", describe(a[0]))
	}
	return fmt.Sprintf(format, plain(a[1:])...), nil
}

func length(a []any) (any, error) {
	switch x := a[0].(type) {
	case string:
		return len(x), nil
	case []any:
		return len(x), nil
	case map[string]any:
		return len(x), nil
	}
	return nil, fmt.Errorf("len of %s", describe(a[0]))
}

func index(a ...any) (any, error) {
	if len(a) == 0 {
		return nil, fmt.Errorf("wrong number of args: want at least 1, got 0")
	}
	v := a[0]
	for _, k := range a[1:] {
		switch x := v.(type) {
		case []any:
			i, ok := toInt(k)
			if !ok {
				return nil, fmt.Errorf("cannot index a list with %s", describe(k))
			}
			if i < 0 || i >= len(x) {
				return nil, fmt.Errorf("index out of range: %d", i)
			}
			v = x[i]
		case map[string]any:
			s, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("cannot index an object with %s", describe(k))
			}
			v = x[s] // a missing key is nil, as in text/template
		case string:
			i, ok := toInt(k)
			if !ok || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("cannot index a string with %v", k)
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("can't index item of %s", describe(v))
		}
	}
	return v, nil
}

// eq reports whether the first argument equals any of the others.
func eq(a ...any) (any, error) {
	if len(a) < 2 {
		return nil, fmt.Errorf("missing argument for comparison")
	}
	for _, b := range a[1:] {
		e, err := equal(a[0], b)
		if err != nil {
			return nil, err
		}
		if e {
			return true, nil
		}
	}
	return false, nil
}

// equal compares two basic values; numbers compare by value whatever
// their Go or JSON type.
func equal(a, b any) (bool, error) {
	if fa, ok := toFloat(a); ok {
		if fb, ok := toFloat(b); ok {
			return fa == fb, nil
		}
	}
	switch x := a.(type) {
	case nil:
		return b == nil, nil
	case string:
		if y, ok := b.(string); ok {
			return x == y, nil
		}
	case bool:
		if y, ok := b.(bool); ok {
			return x == y, nil
		}
	}
	if b == nil {
		return false, nil
	}
	return false, fmt.Errorf("incompatible types for comparison: %s and %s", describe(a), describe(b))
}

func compare(a, b any) (int, error) {
	if fa, ok := toFloat(a); ok {
		if fb, ok := toFloat(b); ok {
			switch {
			case fa < fb:
				return -1, nil
			case fa > fb:
				return 1, nil
			}
			return 0, nil
		}
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			switch {
			case x < y:
				return -1, nil
			case x > y:
				return 1, nil
			}
			return 0, nil
		}
	}
	return 0, fmt.Errorf("incompatible types for comparison: %s and %s", describe(a), describe(b))
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint8:
		return float64(x), true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	}
	return 0, false
}

func toInt(v any) (int, bool) {
	f, ok := toFloat(v)
	if !ok || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}
