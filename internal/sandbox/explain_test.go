package sandbox

import (
	"strings"
	"testing"
)

func TestExplain(t *testing.T) {
	ws := "/work/ws"
	for _, tt := range []struct {
		name, stderr string
		p            Policy
		want         string // a part of the answer; "" for none
	}{
		{"write outside", "touch: cannot touch '/etc/app.conf': Permission denied", Policy{Workspace: ws}, "`sandbox: {write: [/etc]}`"},
		{"write to a folder", "sh: 1: cannot create /srv/out/x.txt: Permission denied", Policy{Workspace: ws}, "write: [/srv/out]"},
		{"read-only", "OSError: [Errno 30] Read-only file system: '/opt/tool/cache'", Policy{Workspace: ws}, "write: [/opt/tool/cache]"},
		{"read a home file", "cat: /home/ada/.config/tool.yaml: Permission denied", Policy{Workspace: ws}, "`sandbox: {read: [/home/ada/.config/tool.yaml]}`"},
		{"inside the workspace is not the sandbox", "cat: /work/ws/x: Permission denied", Policy{Workspace: ws}, ""},
		{"network off", "curl: (6) Could not resolve host: example.com", Policy{}, "`sandbox: {network: on}`"},
		{"connection refused", "ConnectionRefusedError: [Errno 111] Connection refused", Policy{Network: NetOff}, "network: [HOST]"},
		{"network on is not the sandbox", "curl: (7) Connection refused", Policy{Network: NetOn}, ""},
		{"hosts", "socket.gaierror: [Errno -3] Temporary failure in name resolution", Policy{Network: NetHosts, Hosts: []string{"pypi.org"}}, "only pypi.org"},
		{"fork", "sh: 1: Cannot fork", Policy{MaxProcs: 20}, "20 processes; if the program needs more, raise it with `sandbox: {max-procs: N}`"},
		{"fork EAGAIN", "bash: fork: retry: Resource temporarily unavailable", Policy{}, "256 processes"},
		{"unrelated", "Traceback: ValueError: bad input", Policy{}, ""},
		{"sh by its path, as Bash runs it", "/bin/sh: 1: cannot create /etc/app.conf: Permission denied", Policy{Workspace: ws}, "write: [/etc]"},
		{"sh by its path, a relative file", "/bin/sh: 1: cannot create out.txt: Read-only file system", Policy{Workspace: ws}, ""},
		{"a program by its path", "/usr/bin/touch: cannot touch '/srv/app.conf': Permission denied", Policy{Workspace: ws}, "write: [/srv]"},
		{"a line that starts with the path denied", "/srv/data: Permission denied", Policy{Workspace: ws}, "read: [/srv/data]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Explain(tt.stderr, tt.p)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("Explain(%q) = %q, want %q in it", tt.stderr, got, tt.want)
			}
		})
	}
}

func TestPathRoot(t *testing.T) {
	home := t.TempDir()
	for _, tt := range []struct{ entry, want string }{
		{home + "/.pyenv/shims", home + "/.pyenv"},
		{home + "/.cargo/bin", home + "/.cargo"},
		{"/usr/local/go/bin", "/usr/local/go"},
		{"/usr/bin", "/usr"},
		{"/bin", "/bin"},
		{home, home},
		{"relative/bin", ""},
	} {
		if got := pathRoot(tt.entry, home); got != tt.want {
			t.Errorf("pathRoot(%q) = %q, want %q", tt.entry, got, tt.want)
		}
	}
}
