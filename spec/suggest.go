package spec

import "github.com/fsdrun/fsd/diag"

// synonyms are keys people write from habit (other tools' spellings) that
// edit distance alone would not map to fsd's.
var synonyms = map[string]string{
	"dependson": "deps", "dependencies": "deps", "needs": "deps", "after": "deps",
	"system": "prompt", "systemprompt": "prompt",
	"args": "input", "parameters": "input", "inputschema": "input",
	"cmd": "command", "exec": "command", "shell": "command",
	"visibility": "item-visibility", "supply": "context-supply",
	"instructionsfile": "instructions-file", "file": "instructions-file",
}

// suggest returns the known key closest to key, or "" (see diag.Suggest).
func suggest(key string, known []string) string { return diag.Suggest(key, known, synonyms) }

// didYouMean is the hint for an unknown name, or "".
func didYouMean(name string, known []string) string {
	return diag.DidYouMean(name, known, synonyms)
}
