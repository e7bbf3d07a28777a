package spec

import (
	"strconv"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
)

// jsonSize returns about how many bytes v, a value from schemas.Value,
// takes as compact JSON (string escapes aside), and stops counting once
// past limit: a check of a schema's size costs no more than the limit,
// and allocates nothing.
func jsonSize(v any, limit int) int {
	n := 0
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			n += len(v) + 2
		case map[string]any:
			n += 2
			for k, e := range v {
				if n > limit {
					return
				}
				n += len(k) + 4 // "k": and a comma
				walk(e)
			}
		case []any:
			n += 2
			for _, e := range v {
				if n > limit {
					return
				}
				n++
				walk(e)
			}
		case int64:
			n += len(strconv.FormatInt(v, 10))
		case float64:
			n += len(strconv.FormatFloat(v, 'g', -1, 64))
		case bool:
			n += 5
		default:
			n += 4 // null
		}
	}
	walk(v)
	return n
}

// schemaFits reports whether a JSON Schema is within MaxToolSchema, and
// reports it at n in file when it is not; what names it ("the tool's
// input schema").
func schemaFits(d *decoder, file string, n *yaml.Node, what string, v any) bool {
	if jsonSize(v, MaxToolSchema) <= MaxToolSchema {
		return true
	}
	d.diags = append(d.diags, diag.Diagnostic{Pos: diag.Pos{File: file, Line: n.Line, Col: n.Column}, Kind: "limit",
		Message: what + " is over " + strconv.Itoa(MaxToolSchema>>10) + " KiB as JSON; it is sent with every model request that uses it",
		Hint:    "keep a schema to types and short descriptions; reference text belongs in the skill's instructions"})
	return false
}

// JSONSize is how the tool limits measure a schema: about how many bytes
// v (decoded from YAML or JSON) takes as compact JSON, counted no further
// than past limit. A tool from anywhere else (an MCP server's tools/list)
// is held to MaxToolSchema by the same measure.
func JSONSize(v any, limit int) int { return jsonSize(v, limit) }
