package spec

import (
	"go.yaml.in/yaml/v4"
)

// Approve is a tool's approval policy: whether a person must approve a
// call before it runs. The empty Approve means "not set": the next level
// decides (a tool's own, then its MCP server's, then its skill's, then the
// workflow's default), and where nothing is set a call runs at once.
type Approve string

// The approval policies.
const (
	// ApproveAlways asks before every call.
	ApproveAlways Approve = "always"
	// ApproveNever runs every call at once (the default).
	ApproveNever Approve = "never"
	// ApproveFirst asks before the first call of the tool in a run; once
	// one call is approved the tool's later calls run at once.
	ApproveFirst Approve = "first"
)

// Or returns a, or else when a is not set.
func (a Approve) Or(next Approve) Approve {
	if a != "" {
		return a
	}
	return next
}

// decodeApprove reads an approve: value, reporting anything but always,
// never or first at its position.
func decodeApprove(d *decoder, n *yaml.Node) Approve {
	s, ok := str(n)
	if !ok {
		if n = deref(n); n != nil && n.Kind == yaml.ScalarNode {
			// `approve: true` is a boolean to YAML: say what to write.
			d.errorf(n, "value", "approve %s is not %s", n.Value, oneOf(approveValues)).Hint = "write approve: always (or first, or never)"
		}
		return ""
	}
	if !contains(approveValues, s) {
		x := d.errorf(n, "value", "approve %q is not %s", s, oneOf(approveValues))
		x.Hint = didYouMean(s, approveValues)
		return ""
	}
	return Approve(s)
}
