package sandbox

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
)

// systemRead are the machine's folders every sandboxed program may read
// (and run programs from): where programs, libraries and their settings
// live. /var, /run, /home, /root and /srv are not among them: they hold
// other programs' state, sockets and users' files.
var systemRead = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys"}

// devices are the /dev nodes a program may open, read and write. Terminals
// (/dev/tty, /dev/pts) are not among them: a program must not write to the
// user's terminal behind fsd's back.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// homeSecrets are the files and folders under a home folder that hold
// credentials: never readable, even inside a folder the policy grants
// (they are hidden there), and a PATH entry's root that holds one is not
// granted whole.
var homeSecrets = []string{
	".ssh", ".aws", ".azure", ".config/gcloud", ".gnupg", ".docker", ".kube",
	".netrc", ".git-credentials", ".config/gh", ".config/fsd", ".npmrc", ".pypirc",
	".cargo/credentials", ".cargo/credentials.toml", ".password-store", ".local/share/keyrings",
}

// systemSecrets are files under the readable system folders that hold
// credentials (readable by root, and fsd may run as root): hidden.
var systemSecrets = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/ssh"}

// plan is what a sandbox grants one program, resolved to absolute,
// existing paths: what the launcher (or bwrap) is told.
type plan struct {
	Read  []string `json:"read"`  // readable and executable
	Write []string `json:"write"` // readable and writable
	Mask  []string `json:"mask"`  // hidden: existing secrets inside a granted path
	Links []link   `json:"links,omitempty"`
}

// link is a granted path (or the working folder) as it was given, through
// a symlink, and the path it resolves to: the sandbox shows it, so a
// program finds its workspace at the path it was told even where the
// link itself lies in a hidden folder (/tmp) or outside bwrap's view.
type link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// aliases are the links among the working folder dir and p's paths.
func aliases(dir string, p Policy) []link {
	var out []link
	for _, given := range append(append([]string{p.Workspace, dir}, p.Read...), p.Write...) {
		if !filepath.IsAbs(given) {
			continue
		}
		given = filepath.Clean(given)
		real, err := filepath.EvalSymlinks(given)
		if err != nil || real == given || slices.ContainsFunc(out, func(l link) bool { return l.Path == given }) {
			continue
		}
		out = append(out, link{Path: given, Target: real})
	}
	return out
}

// target is p resolved when it is one of links, else p.
func target(links []link, p string) string {
	for _, l := range links {
		if l.Path == p {
			return l.Target
		}
	}
	return p
}

// makePlan resolves p for a program whose environment is env and whose
// executable is exe. Paths that do not exist are left out (a rule needs an
// open file); symbolic links are resolved, so a rule names what a program
// reaches.
//
// X2: home secrets inside a granted path are masked.
// T12: so are the folders under Policy.Hide (the run records).
func makePlan(p Policy, env []string, exe string) plan {
	var pl plan
	home := lookup(env, "HOME")
	for _, d := range systemRead {
		pl.Read = appendReal(pl.Read, d)
	}
	pl.Read = appendReal(pl.Read, exe)
	for _, e := range filepath.SplitList(lookup(env, "PATH")) {
		if r := pathRoot(e, home); r != "" {
			pl.Read = appendReal(pl.Read, r)
		}
	}
	for _, r := range p.Read {
		pl.Read = appendReal(pl.Read, r)
	}
	for _, d := range devices {
		pl.Write = appendReal(pl.Write, d)
	}
	if p.Workspace != "" {
		pl.Write = appendReal(pl.Write, p.Workspace)
	}
	for _, w := range p.Write {
		pl.Write = appendReal(pl.Write, w)
	}
	granted := append(slices.Clone(pl.Read), pl.Write...)
	var secrets []string
	for _, h := range homes(home) {
		for _, s := range homeSecrets {
			secrets = append(secrets, filepath.Join(h, s))
		}
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		secrets = append(secrets, filepath.Join(x, "fsd"))
	}
	secrets = append(secrets, systemSecrets...)
	for _, h := range p.Hide {
		if real, err := filepath.EvalSymlinks(h); err == nil && !slices.ContainsFunc(pl.Write, func(w string) bool { return within(w, real) }) {
			secrets = append(secrets, real)
		}
	}
	for _, s := range secrets {
		real, err := filepath.EvalSymlinks(s)
		if err != nil || slices.Contains(pl.Mask, real) {
			continue
		}
		for _, g := range granted {
			if within(real, g) {
				pl.Mask = append(pl.Mask, real)
				break
			}
		}
	}
	return pl
}

// pathRoot is what a PATH entry grants: the folder its programs come
// with (/root/.pyenv for /root/.pyenv/shims, ~/.cargo for ~/.cargo/bin,
// /usr/local/go for /usr/local/go/bin), or only the entry itself when that
// folder would be the home folder, the root, or holds a home secret.
// "" for an entry that is not an absolute folder.
func pathRoot(entry, home string) string {
	if !filepath.IsAbs(entry) {
		return ""
	}
	entry = filepath.Clean(entry)
	root := entry
	switch {
	case home != "" && within(entry, home) && entry != filepath.Clean(home):
		rel, _ := filepath.Rel(home, entry)
		root = filepath.Join(home, strings.Split(rel, string(filepath.Separator))[0])
	default:
		switch filepath.Base(entry) {
		case "bin", "sbin", "shims":
			root = filepath.Dir(entry)
		}
	}
	if root == "/" || (home != "" && root == filepath.Clean(home)) {
		return entry
	}
	for _, h := range homes(home) {
		for _, s := range homeSecrets {
			secret := filepath.Join(h, s)
			if _, err := os.Lstat(secret); err == nil && within(secret, root) {
				return entry
			}
		}
	}
	return root
}

// homes are the home folders whose secrets are hidden: the program's
// HOME, fsd's own, and the account's in the user database — HOME is only
// a variable, and a run started with HOME=/tmp/x must not show a
// workspace of ~ its real ~/.ssh.
func homes(home string) []string {
	var hs []string
	add := func(h string) {
		if h != "" && !slices.Contains(hs, filepath.Clean(h)) {
			hs = append(hs, filepath.Clean(h))
		}
	}
	add(home)
	if h, err := os.UserHomeDir(); err == nil {
		add(h)
	}
	if u, err := user.Current(); err == nil {
		add(u.HomeDir)
	}
	return hs
}

// appendReal appends path, resolved, when it exists and is not there yet.
func appendReal(list []string, path string) []string {
	if path == "" {
		return list
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return list
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil || slices.Contains(list, real) {
		return list
	}
	return append(list, real)
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// lookup is the value of name in env (NAME=value pairs), the last wins as
// in exec.
func lookup(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
