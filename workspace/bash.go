package workspace

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/fsdrun/fsd/tool"
)

// Bash's time bounds, in Claude Code's unit (milliseconds) on the wire.
const (
	DefaultBashTimeout = 120 * time.Second
	MaxBashTimeout     = 600 * time.Second
)

func (t *Tool) bash(ctx context.Context, args json.RawMessage) tool.Result {
	var a struct {
		Command string `json:"command"`
		Timeout int64  `json:"timeout"`
	}
	if bad := decode(args, &a); bad != nil {
		return *bad
	}
	if a.Command == "" {
		return failf("command is empty; give a command line such as ls -la")
	}
	timeout := DefaultBashTimeout
	if a.Timeout > 0 {
		timeout = min(time.Duration(a.Timeout)*time.Millisecond, MaxBashTimeout)
	}
	opts := t.opts
	if t.readOnly != nil {
		// The loaded skills' folders, whose scripts a command runs.
		opts = append(slices.Clone(opts), tool.WithReadable(t.readOnly()...))
	}
	return tool.RunShell(ctx, Bash, t.ws.dir, a.Command, timeout, opts...)
}
