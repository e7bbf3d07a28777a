package board

import (
	"errors"
	"fmt"
	"strings"
)

// Code is the stable error code a board tool returns to the model (D2).
type Code string

// The error codes of D2 (docs/design.md), plus the board's own.
const (
	CodeUnknownAssignee   Code = "unknown_assignee"
	CodeTaskNotFound      Code = "task_not_found"
	CodeDependencyCycle   Code = "dependency_cycle"
	CodeUnknownDependency Code = "unknown_dependency"
	CodePendingCap        Code = "enqueued_task_cap_exceeded"
	CodeTotalCap          Code = "total_task_cap_exceeded"
	CodeDuplicateID       Code = "duplicate_task_id"
	// CodeInvalidTask is a task spec the board cannot accept for another
	// reason: an empty goal or a malformed id.
	CodeInvalidTask Code = "invalid_task"
	// CodeTaskFinished answers cancelTask on a task that already finished.
	CodeTaskFinished Code = "task_finished"
	// CodeBoardRunning answers Run while another Run of the board is active.
	CodeBoardRunning Code = "board_running"
	// CodeInvalidArguments answers a tool call whose arguments are not the
	// JSON object the tool's schema describes.
	CodeInvalidArguments Code = "invalid_arguments"
	// CodeUnknownTool answers CallTool with a name that is not a board tool.
	CodeUnknownTool Code = "unknown_tool"
	// CodeCancelled answers runBoard when the run itself was cancelled.
	CodeCancelled Code = "cancelled"
)

// Error is a rejected board operation. Callers test the class with
// errors.Is against the Err* sentinels, or read Code directly.
type Error struct {
	Code    Code
	Message string
	// Task is the task the error is about, when there is one.
	Task string
	// Roster lists the valid assignees (unknown_assignee only).
	Roster []string
	// Cycle is the cycle from its earliest task, first task repeated at the
	// end (dependency_cycle only).
	Cycle []string
}

func (e *Error) Error() string { return e.Message }

// Is reports whether target is an *Error with the same code, so
// errors.Is(err, board.ErrUnknownAssignee) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrUnknownAssignee   = &Error{Code: CodeUnknownAssignee, Message: "unknown assignee"}
	ErrTaskNotFound      = &Error{Code: CodeTaskNotFound, Message: "task not found"}
	ErrDependencyCycle   = &Error{Code: CodeDependencyCycle, Message: "dependency cycle"}
	ErrUnknownDependency = &Error{Code: CodeUnknownDependency, Message: "unknown dependency"}
	ErrPendingCap        = &Error{Code: CodePendingCap, Message: "pending task cap exceeded"}
	ErrTotalCap          = &Error{Code: CodeTotalCap, Message: "total task cap exceeded"}
	ErrDuplicateID       = &Error{Code: CodeDuplicateID, Message: "duplicate task id"}
	ErrInvalidTask       = &Error{Code: CodeInvalidTask, Message: "invalid task"}
	ErrTaskFinished      = &Error{Code: CodeTaskFinished, Message: "task already finished"}
	ErrBoardRunning      = &Error{Code: CodeBoardRunning, Message: "board already running"}
)

// ErrTaskCancelled is the cause (context.Cause) of a running task's
// context when Cancel (cancelTask) stopped it. A task's context can also
// end because the run's did (an interrupt, the run's timeout); a runner
// that hands tasks to other processes tells the two apart by the cause:
// a cancelled task is stopped where it runs, an interrupted run leaves
// remote work running for a resume to pick up.
var ErrTaskCancelled = errors.New("cancelled by cancelTask")

func errf(code Code, task string, format string, args ...any) *Error {
	return &Error{Code: code, Task: task, Message: fmt.Sprintf(format, args...)}
}

// cycleMessage prints a cycle the way the style guide asks:
// dependency cycle: "a" -> "b" -> "a".
func cycleMessage(cycle []string) string {
	q := make([]string, len(cycle))
	for i, id := range cycle {
		q[i] = fmt.Sprintf("%q", id)
	}
	return "dependency cycle: " + strings.Join(q, " -> ")
}
