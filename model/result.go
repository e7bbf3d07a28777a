package model

// ToolResult is what one tool call answers, as every package that runs
// tools hands it to the generator: the text the model reads and, typed
// beside it, whether the call failed and why, so no package has to parse
// another's text to tell.
type ToolResult struct {
	// Text is what the model reads (a board tool's JSON, a receipt, a
	// program's output, an error message).
	Text string
	// IsError marks a failed call; the model reads Text and may correct it.
	IsError bool
	// Code is the failure's machine-readable code when the tool has one
	// (board: unknown_assignee, task_not_found, …; read_skill:
	// SKILL_ID_INVALID, …); "" otherwise.
	Code string
	// Artifact is the skill whose artifact a reader call read (H4).
	Artifact string
	// Fresh marks a result that reports on work a resumed run does again
	// (runBoard): a resume does not compare it with the journal's.
	Fresh bool
}

// ErrorResult is a failed call's result.
func ErrorResult(code, text string) ToolResult {
	return ToolResult{Text: text, IsError: true, Code: code}
}
