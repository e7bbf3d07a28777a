package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fsdrun/fsd/internal/sandbox"
)

// TestSandboxFor is the table of which sandbox applies to a program: the
// strictest of the workflow's, the skill's and the program's own setting
// among those that set one, folders from the workflow alone.
func TestSandboxFor(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home folder")
	}
	wdir, sdir := filepath.FromSlash("/w"), filepath.FromSlash("/w/skills/s")
	net := func(mode sandbox.NetMode, hosts ...string) *Sandbox { return &Sandbox{Network: mode, Hosts: hosts} }
	hosts := func(h ...string) *Sandbox { return net(sandbox.NetHosts, h...) }
	procs := func(n int) *Sandbox { return &Sandbox{MaxProcs: n} }
	base := sandbox.Policy{Network: sandbox.NetOff, Read: []string{sdir}}
	with := func(f func(p *sandbox.Policy)) *sandbox.Policy { p := base; f(&p); return &p }
	for _, tt := range []struct {
		name                 string
		workflow, skill, own *Sandbox
		want                 *sandbox.Policy
	}{
		{"unset everywhere: network off, default procs", nil, nil, nil, &base},
		{"sandbox: off runs unconfined", &Sandbox{Off: true}, net(sandbox.NetOff), nil, nil},
		{"off ignores what the skill asks", &Sandbox{Off: true}, procs(4), hosts("a.example"), nil},
		{"a skill may ask for network", nil, net(sandbox.NetOn), nil, with(func(p *sandbox.Policy) { p.Network = sandbox.NetOn })},
		{"a tool may ask for network", nil, nil, net(sandbox.NetOn), with(func(p *sandbox.Policy) { p.Network = sandbox.NetOn })},
		{"the workflow's off beats the skill's on", net(sandbox.NetOff), net(sandbox.NetOn), nil, &base},
		{"the tool's off beats the workflow's on", net(sandbox.NetOn), nil, net(sandbox.NetOff), &base},
		{"hosts beat on", net(sandbox.NetOn), hosts("a.example"), nil,
			with(func(p *sandbox.Policy) { p.Network, p.Hosts = sandbox.NetHosts, []string{"a.example"} })},
		{"on keeps the workflow's hosts", hosts("a.example", "b.example"), net(sandbox.NetOn), nil,
			with(func(p *sandbox.Policy) { p.Network, p.Hosts = sandbox.NetHosts, []string{"a.example", "b.example"} })},
		{"host lists intersect", hosts("a.example", "B.example"), hosts("b.example", "c.example"), nil,
			with(func(p *sandbox.Policy) { p.Network, p.Hosts = sandbox.NetHosts, []string{"b.example"} })},
		{"three lists intersect", hosts("a.example", "b.example"), hosts("a.example", "b.example"), hosts("b.example"),
			with(func(p *sandbox.Policy) { p.Network, p.Hosts = sandbox.NetHosts, []string{"b.example"} })},
		{"disjoint lists leave the network off", hosts("a.example"), hosts("b.example"), nil, &base},
		{"hosts and off: off", hosts("a.example"), nil, net(sandbox.NetOff), &base},
		{"the least max-procs", procs(64), procs(8), procs(16), with(func(p *sandbox.Policy) { p.MaxProcs = 8 })},
		{"max-procs set once", nil, nil, procs(16), with(func(p *sandbox.Policy) { p.MaxProcs = 16 })},
		{"folders from the workflow, relative to it, ~ the home",
			&Sandbox{Read: []string{"data", "~/notes"}, Write: []string{"./out", "/abs"}}, nil, nil,
			with(func(p *sandbox.Policy) {
				p.Read = []string{sdir, filepath.Join(wdir, "data"), filepath.Join(home, "notes")}
				p.Write = []string{filepath.Join(wdir, "out"), filepath.FromSlash("/abs")}
			})},
		{"a skill cannot grant itself folders", nil, &Sandbox{Read: []string{"/etc"}, Write: []string{"/tmp/x"}}, nil, &base},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &Workflow{Dir: wdir, Sandbox: tt.workflow}
			s := &Skill{Dir: sdir, Sandbox: tt.skill}
			got := SandboxFor(w, s, tt.own)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("SandboxFor (-want +got):\n%s", d)
			}
		})
	}
	t.Run("no workflow", func(t *testing.T) {
		got := SandboxFor(nil, &Skill{Dir: sdir, Sandbox: net(sandbox.NetOn)}, nil)
		if d := cmp.Diff(with(func(p *sandbox.Policy) { p.Network = sandbox.NetOn }), got); d != "" {
			t.Errorf("SandboxFor (-want +got):\n%s", d)
		}
	})
}

// The sandbox keys read as the table wants them, at every level, and each
// misplaced one is an error at its line.
func TestSandboxKeys(t *testing.T) {
	w := loadString(t, "name: w\nhost: {}\nsandbox:\n  network: [api.example.com, 'pypi.org:443']\n  max-procs: 32\n", "")
	if d := cmp.Diff(&Sandbox{Network: sandbox.NetHosts, Hosts: []string{"api.example.com", "pypi.org:443"}, MaxProcs: 32}, w.Sandbox,
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Node" }, cmp.Ignore())); d != "" {
		t.Errorf("workflow sandbox (-want +got):\n%s", d)
	}
	for _, src := range []string{"sandbox: off", "sandbox: false"} {
		if w := loadString(t, "name: w\nhost: {}\n"+src+"\n", ""); w.Sandbox == nil || !w.Sandbox.Off {
			t.Errorf("%s: got %+v, want Off", src, w.Sandbox)
		}
	}
	for _, tt := range []struct{ src, want string }{
		{"sandbox: on", `w.workflow.yaml:3:10: sandbox "on": want off or a mapping`},
		{"sandbox: {network: ['https://x.example']}", `w.workflow.yaml:3:21: network host "https://x.example": a host name, optionally with :port, not a URL`},
		{"sandbox: {network: [ok.example, '*.com']}", `w.workflow.yaml:3:33: network host "*.com": a wildcard names a domain's hosts`},
		{"sandbox: {network: ['git.example:99999']}", `w.workflow.yaml:3:21: network host "git.example:99999": the port must be a number from 1 to 65535`},
		{"sandbox: {network: sometimes}", "w.workflow.yaml:3:20:"},
		{"sandbox: {max-procs: 0}", "w.workflow.yaml:3:22:"},
		{"sandbox: {write: [./nowhere]}", `warning: sandbox.write "./nowhere"`},
		{"sandbox: {write: ['/']}", `w.workflow.yaml:3:18: warning: sandbox.write "/" makes the whole file system writable: the sandbox no longer protects it`},
		{"sandbox: {write: ['~']}", `w.workflow.yaml:3:18: warning: sandbox.write "~" makes your home folder`},
		{"sandbox: {write: [/usr]}", `w.workflow.yaml:3:18: warning: sandbox.write "/usr" makes the system folder /usr writable`},
		{"sandbox: {write: [/etc/fsd]}", `sandbox.write "/etc/fsd" makes a part of the system folder /etc writable`},
	} {
		_, diags := loadWorkflowString(t, "name: w\nhost: {}\n"+tt.src+"\n")
		if got := diags.Error(); !strings.Contains(got, tt.want) {
			t.Errorf("%s: diagnostics %q, want %q", tt.src, got, tt.want)
		}
	}

	dir := t.TempDir()
	src := "id: s\nname: S\ndescription: d\nversion: 1.0.0\nsandbox: {network: on, max-procs: 8}\n" +
		"tools:\n  - name: t\n    run: {command: [x], sandbox: {network: [a.example]}}\n" +
		"mcp:\n  srv: {command: [y], sandbox: {network: off}}\n"
	s, diags := loadSkill(filepath.Join(dir, "s.skill.yaml"), []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if s.Sandbox.Network != sandbox.NetOn || s.Sandbox.MaxProcs != 8 || s.Tools[0].Run.Sandbox.Hosts[0] != "a.example" || s.MCP[0].Sandbox.Network != sandbox.NetOff {
		t.Errorf("skill sandbox %+v, tool %+v, server %+v", s.Sandbox, s.Tools[0].Run.Sandbox, s.MCP[0].Sandbox)
	}
	for _, tt := range []struct{ src, want string }{
		{"sandbox: {write: [/etc]}", `s.skill.yaml:5:11: sandbox.write: a skill cannot grant itself folders; only the workflow's sandbox: names them`},
		{"sandbox: {read: [/etc]}", `s.skill.yaml:5:11: sandbox.read: a skill cannot grant itself folders`},
		{"sandbox: {netwrok: on}", `s.skill.yaml:5:11: unknown key "netwrok"`},
		{"sandbox: off", "s.skill.yaml:5:10:"},
		{"tools:\n  - name: t\n    run: {reply: hi, sandbox: {network: on}}", "s.skill.yaml:7:31: sandbox applies only to a command"},
		{"mcp:\n  srv: {url: 'https://m.example/mcp', sandbox: {network: on}}", "s.skill.yaml:6:48: sandbox applies only to a command server"},
	} {
		_, diags := loadSkill(filepath.Join(dir, "s.skill.yaml"), []byte("id: s\nname: S\ndescription: d\nversion: 1.0.0\n"+tt.src+"\n"))
		if got := diags.Error(); !strings.Contains(got, tt.want) {
			t.Errorf("%s: diagnostics %q, want %q", tt.src, got, tt.want)
		}
	}
	// A SKILL.md's frontmatter is read leniently (other products' keys are
	// warnings), but a folder it grants itself is still an error.
	_, diags = loadSkill(filepath.Join(dir, "s", "SKILL.md"), []byte("---\nname: s\ndescription: d\nsandbox:\n  write: [/tmp]\n---\nhi\n"))
	if got, want := diags.Error(), "SKILL.md:5:3: sandbox.write: a skill cannot grant itself folders"; !strings.Contains(got, want) || strings.Contains(got, "warning") {
		t.Errorf("SKILL.md: diagnostics %q, want the error %q", got, want)
	}
}
