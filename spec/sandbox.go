package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/internal/egress"
	"github.com/fsdrun/fsd/internal/sandbox"
)

// Sandbox is a `sandbox:` setting: a workflow's (every key, or `sandbox:
// off`), a skill's, a command tool's run.sandbox or a stdio MCP server's.
// Those of a skill, a tool and a server may ask for network and bound
// processes; only the workflow names folders, so a skill cannot grant
// itself more of the machine than the user wrote down.
type Sandbox struct {
	Node
	// Off is the workflow's `sandbox: off`: skills' programs run
	// unconfined. Nothing else turns the sandbox off.
	Off bool `json:"off,omitempty"`
	// Network is "" where unset, else off, hosts (Hosts names them) or on.
	Network sandbox.NetMode `json:"network,omitempty"`
	Hosts   []string        `json:"hosts,omitempty"`
	// Read and Write are further folders or files, as written: relative
	// to the workflow's folder, ~ the home folder. Workflow only.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// MaxProcs bounds the processes of one call; 0 where unset.
	MaxProcs int `json:"max-procs,omitempty"`
}

var (
	// sandboxKeys are a workflow's; sandboxOwnKeys a skill's, a tool's
	// and an MCP server's (the others are an error there, not unknown).
	sandboxKeys    = []string{"network", "read", "write", "max-procs"}
	sandboxOwnKeys = []string{"network", "max-procs"}
)

// sandboxOff is the one scalar a workflow's sandbox: takes.
const sandboxOff = "off"

// decodeSandbox reads a sandbox: value with the keys known at its level;
// workflow says whether `sandbox: off` is allowed there.
func decodeSandbox(d *decoder, n *yaml.Node, workflow bool) *Sandbox {
	sb := &Sandbox{}
	if s, isStr := str(n); isStr || n.Kind == yaml.ScalarNode {
		b, isBool := boolean(n)
		switch {
		case !workflow:
			// The schema says a mapping is wanted.
		case s == sandboxOff || isBool && !b:
			sb.Off = true
		default:
			d.errorf(n, "value", "sandbox %q: want off or a mapping of network, read, write and max-procs", n.Value)
		}
		sb.Pos = d.pos(n)
		return sb
	}
	for _, f := range d.fields(n, sandboxKeys, &sb.Node) {
		switch f.key {
		case "network":
			sb.Network, sb.Hosts = decodeNetwork(d, f.v)
		case "read", "write":
			if !workflow && !slices.Contains(sandboxOwnKeys, f.key) {
				// Not an unknown key: the skill's author meant it, and
				// it would widen what the user wrote down.
				d.errorf(f.k, "value", "sandbox.%s: a skill cannot grant itself folders; only the workflow's sandbox: names them", f.key)
				continue
			}
			paths, pos := d.strList(f.v)
			for i, p := range paths {
				if p == "" {
					d.diags = append(d.diags, diag.Errorf(pos[i], "path", "sandbox.%s: an empty path", f.key))
				}
			}
			if f.key == "read" {
				sb.Read = paths
			} else {
				sb.Write = paths
			}
		case "max-procs":
			sb.MaxProcs, _ = integer(f.v)
		}
	}
	return sb
}

// decodeNetwork reads network: off, on (YAML's booleans too) or a list
// of host names.
func decodeNetwork(d *decoder, n *yaml.Node) (sandbox.NetMode, []string) {
	if n.Kind == yaml.SequenceNode {
		hosts, pos := d.strList(n)
		for i, h := range hosts {
			if problem := hostProblem(h); problem != "" {
				d.diags = append(d.diags, diag.Diagnostic{Pos: pos[i], Kind: "value",
					Message: fmt.Sprintf("network host %q: %s", h, problem),
					Hint:    "name a host as example.com (ports 80 and 443), *.example.com (its subdomains) or example.com:8443"})
			}
		}
		if len(hosts) == 0 {
			return sandbox.NetOff, nil
		}
		return sandbox.NetHosts, hosts
	}
	if b, ok := boolean(n); ok {
		return map[bool]sandbox.NetMode{true: sandbox.NetOn, false: sandbox.NetOff}[b], nil
	}
	s, _ := str(n)
	switch sandbox.NetMode(s) {
	case sandbox.NetOff, sandbox.NetOn:
		return sandbox.NetMode(s), nil
	}
	return "", nil // the schema reports it
}

// hostProblem says what keeps h from being a `network:` host: the rule
// the sandbox's proxy applies (egress.CheckEntry), so what validates is
// what runs.
func hostProblem(h string) string {
	if err := egress.CheckEntry(h); err != nil {
		return err.Error()
	}
	return ""
}

// checkSandboxPaths warns about read and write paths that do not exist:
// the sandbox cannot make them reachable.
func checkSandboxPaths(d *decoder, w *Workflow) {
	sb := w.Sandbox
	for _, key := range []string{"read", "write"} {
		list := sb.Read
		if key == "write" {
			list = sb.Write
		}
		for _, p := range list {
			if p == "" {
				continue
			}
			abs := filepath.Clean(ExpandPath(p, w.Dir))
			if _, err := os.Stat(abs); err != nil {
				d.diags = append(d.diags, diag.Diagnostic{Pos: sb.At(key), Severity: diag.Warning, Kind: "path",
					Message: fmt.Sprintf("sandbox.%s %q: %s; programs cannot reach it", key, p, ioMessage(err))})
			}
			if what := unprotected(abs); key == "write" && what != "" {
				d.diags = append(d.diags, diag.Diagnostic{Pos: sb.At(key), Severity: diag.Warning, Kind: "sandbox",
					Message: fmt.Sprintf("sandbox.write %q makes %s writable: the sandbox no longer protects it", p, what),
					Hint:    "name the folder the programs' output goes to"})
			}
		}
	}
}

// SandboxFor is the sandbox policy of one program of skill s — a command
// tool, a script, a stdio MCP server — whose own setting is own (a tool's
// run.sandbox, a server's sandbox; nil for a script). w may be nil (a
// remote worker has no workflow). It is nil when the workflow says
// `sandbox: off`: the program runs unconfined.
//
// Otherwise the strictest of the workflow's, the skill's and own wins
// among those that set a value: network off before a list of hosts
// before on, the hosts every list names (none left: off), the least
// max-procs; unset everywhere, the network is off and max-procs is the
// sandbox's default. Folders come from the workflow alone, made absolute;
// the skill's own folder is always readable. The workspace is the
// caller's to fill in.
//
// T9: the strictest of the workflow's, the skill's and the program's own
// settings applies; folders come from the workflow alone.
func SandboxFor(w *Workflow, s *Skill, own *Sandbox) *sandbox.Policy {
	var wf *Sandbox
	if w != nil {
		wf = w.Sandbox
	}
	if wf != nil && wf.Off {
		return nil
	}
	p := &sandbox.Policy{Network: sandbox.NetOff}
	if s != nil && s.Dir != "" {
		p.Read = append(p.Read, absPath(s.Dir))
	}
	if wf != nil {
		for _, r := range wf.Read {
			p.Read = append(p.Read, absPath(ExpandPath(r, w.Dir)))
		}
		for _, r := range wf.Write {
			p.Write = append(p.Write, absPath(ExpandPath(r, w.Dir)))
		}
	}
	var levels []*Sandbox
	for _, l := range []*Sandbox{wf, skillSandbox(s), own} {
		if l != nil {
			levels = append(levels, l)
		}
	}
	set, hostsSeen := false, false
	net := sandbox.NetOn
	for _, l := range levels {
		if l.MaxProcs > 0 && (p.MaxProcs == 0 || l.MaxProcs < p.MaxProcs) {
			p.MaxProcs = l.MaxProcs
		}
		if l.Network == "" {
			continue
		}
		set = true
		if netRank[l.Network] < netRank[net] {
			net = l.Network
		}
		if l.Network == sandbox.NetHosts {
			p.Hosts = intersectHosts(p.Hosts, l.Hosts, !hostsSeen)
			hostsSeen = true
		}
	}
	switch {
	case !set, net == sandbox.NetHosts && len(p.Hosts) == 0:
		p.Network, p.Hosts = sandbox.NetOff, nil
	case net != sandbox.NetHosts:
		p.Network, p.Hosts = net, nil
	default:
		p.Network = net
	}
	return p
}

// netRank orders the network modes from strictest.
var netRank = map[sandbox.NetMode]int{sandbox.NetOff: 0, sandbox.NetHosts: 1, sandbox.NetOn: 2}

func skillSandbox(s *Skill) *Sandbox {
	if s == nil {
		return nil
	}
	return s.Sandbox
}

// intersectHosts is the hosts of have that next names too (host names
// compared without case), or next itself when first.
func intersectHosts(have, next []string, first bool) []string {
	var out []string
	for _, h := range next {
		h = strings.ToLower(h)
		if (first || slices.Contains(have, h)) && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// unprotected names what a writable folder abs would open to every
// program — the whole file system, the home folder, a system folder —
// or is "" for a folder of its own.
func unprotected(abs string) string {
	within := func(p, dir string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	if filepath.Dir(abs) == abs {
		return "the whole file system"
	}
	if h := homeDir(); h != "" && within(h, abs) {
		return "your home folder " + h
	}
	for _, sys := range []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/boot"} {
		switch {
		case within(sys, abs):
			return "the system folder " + sys
		case within(abs, sys):
			return "a part of the system folder " + sys
		}
	}
	return ""
}
