package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fsdrun/fsd/internal/lazyre"
)

// Describe is one line saying what confines programs under p on this
// machine: the backend, the network, the writable folders and the
// process bound (what `fsd run -v` prints).
func Describe(p Policy) string {
	b, err := Backend()
	if err != nil {
		return "sandbox: unavailable (" + err.Error() + ")"
	}
	net := string(p.Network)
	switch p.Network {
	case "", NetOff:
		net = "off"
	case NetHosts:
		net = "only " + strings.Join(p.Hosts, ", ")
	}
	var w []string
	if p.Workspace != "" {
		w = append(w, p.Workspace)
	}
	w = append(append(w, p.Write...), "private /tmp")
	max := p.MaxProcs
	if max <= 0 {
		max = DefaultMaxProcs
	}
	return fmt.Sprintf("sandbox: %s; network %s; writable: %s; max procs %d (%s)", b, net, strings.Join(w, ", "), max, procBound())
}

var (
	reDenied  = lazyre.New(`(?i)permission denied|read-only file system|operation not permitted`)
	reWrite   = lazyre.New(`(?i)read-only file system|cannot create|can't create|cannot touch|cannot make|mkdir|for writing|cannot remove|cannot move|open .* for write|directory nonexistent`)
	reNet     = lazyre.New(`(?i)network is unreachable|connection refused|name resolution|name or service not known|could not resolve|nodename nor servname|no address associated|getaddrinfo|failed to resolve|no route to host`)
	reFork    = lazyre.New(`(?i)fork.*(resource temporarily unavailable|retry)|cannot fork|can't fork|resource temporarily unavailable.*fork|(thread|process).*resource temporarily unavailable`)
	reAbsPath = lazyre.New(`(/[^\s:'"` + "`" + `,;()]+)`)
)

// Explain reads a failed program's stderr tail and says in one sentence
// what the sandbox likely denied and which workflow setting allows it,
// or "" when nothing in it points at the sandbox.
func Explain(stderr string, p Policy) string {
	lines := strings.Split(stderr, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		switch {
		case reFork().MatchString(l):
			max := p.MaxProcs
			if max <= 0 {
				max = DefaultMaxProcs
			}
			return fmt.Sprintf("The sandbox bounds a call to %d processes; if the program needs more, raise it with `sandbox: {max-procs: N}` in the workflow.", max)
		case (p.Network == "" || p.Network == NetOff || p.Network == NetHosts) && reNet().MatchString(l):
			if p.Network == NetHosts {
				return "The sandbox lets the program reach only " + strings.Join(p.Hosts, ", ") + "; add the host it needs to `sandbox: {network: [HOST]}` in the workflow, or allow all with `network: on`."
			}
			return "The sandbox keeps the network off; allow it with `sandbox: {network: on}` in the workflow, or only the hosts needed with `sandbox: {network: [HOST]}`."
		case reDenied().MatchString(l):
			path := deniedPath(l)
			if path == "" || within(path, "/proc") {
				continue
			}
			if p.Workspace != "" && within(path, p.Workspace) {
				continue
			}
			if reWrite().MatchString(l) {
				dir := path
				if filepath.Ext(path) != "" {
					dir = filepath.Dir(path)
				}
				return fmt.Sprintf("The sandbox lets programs write only in the workspace and a private /tmp; %s is outside them: allow it with `sandbox: {write: [%s]}` in the workflow, or write in the workspace.", path, dir)
			}
			return fmt.Sprintf("The sandbox did not let the program read %s; allow it with `sandbox: {read: [%s]}` in the workflow.", path, path)
		}
	}
	return ""
}

// deniedPath is the absolute path a denial line names, "" when none.
func deniedPath(line string) string {
	// A line may start with the program's own path, as every message of
	// a shell started as /bin/sh (the Bash tool's) does: "/bin/sh: 1:
	// cannot create x: …". That is not what was denied.
	if prog, rest, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(prog, "/") && !strings.ContainsAny(prog, " \t") && strings.Contains(rest, ": ") {
		line = rest
	}
	for _, m := range reAbsPath().FindAllString(line, -1) {
		if m != "/" && !strings.HasPrefix(m, "//") {
			return strings.TrimRight(m, ".")
		}
	}
	return ""
}
