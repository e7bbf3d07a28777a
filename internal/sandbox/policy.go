package sandbox

import "errors"

// NetMode is how much of the network a sandboxed program reaches.
type NetMode string

// The network modes, from strictest to loosest.
const (
	NetOff   NetMode = "off"   // no network at all (the default)
	NetHosts NetMode = "hosts" // only Hosts, through fsd's allowlisting proxy
	NetOn    NetMode = "on"    // the machine's network
)

// Policy is what one sandboxed program may do.
type Policy struct {
	// Workspace is the run's workspace, absolute: readable and writable,
	// and the program's working folder unless the command sets another.
	Workspace string
	// Read are further folders or files readable (never writable): the
	// skill's folder, the folders the workflow names.
	Read []string
	// Write are further folders writable besides Workspace and the
	// private tmp: only what the workflow names.
	Write []string
	// Hide are folders or files no program may see, even inside the
	// workspace or a Write folder: the run records, which a program able
	// to write them could rewrite (a forged approval, an edited journal).
	// One that holds the workspace or a Write folder is not hidden: they
	// would go with it, and what is outside them is not writable anyway.
	Hide []string
	// Network is NetOff when empty.
	Network NetMode
	// Hosts are the host names (or host:port) reachable under NetHosts.
	Hosts []string
	// MaxProcs bounds the processes of one call (0: DefaultMaxProcs).
	MaxProcs int
}

// DefaultMaxProcs bounds the processes of one sandboxed call when the
// policy sets no bound: plenty for a build or a test run, few enough
// that a fork bomb stops at once.
const DefaultMaxProcs = 256

// ErrUnavailable is wrapped by Wrap's error when no sandbox can be had on
// this machine.
var ErrUnavailable = errors.New("no sandbox is available")
