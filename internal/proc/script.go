package proc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Interpreters start a script that cannot start itself, by extension:
// skill folders travel as zip files and lose the executable bit, and many
// scripts are executable yet have no #! line (the kernel refuses those with
// "exec format error"). Agent Skills instructions say "run scripts/x.py",
// not "chmod +x" or "add a #! line".
var Interpreters = map[string][]string{
	".py": {"python3"}, ".sh": {"sh"}, ".bash": {"bash"}, ".js": {"node"}, ".mjs": {"node"}, ".cjs": {"node"},
	".rb": {"ruby"}, ".pl": {"perl"}, ".php": {"php"}, ".ts": {"npx", "tsx"},
}

// ScriptArgv is how to start the script at path (absolute): a native
// program or a script with a #! line runs itself when executable; any
// other file runs through the interpreter its #! line or, failing that,
// its extension names. When none applies, problem says so in words a
// model or an author can act on.
func ScriptArgv(path string) (argv []string, problem string) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err.Error()
	}
	head := readHead(path)
	interp := shebang(head)
	if st.Mode().Perm()&0o111 != 0 && (interp != nil || native(head)) {
		return []string{path}, ""
	}
	if interp != nil {
		return append(interp, path), ""
	}
	if native(head) {
		return nil, fmt.Sprintf("%s is a native program but not executable; make it executable (chmod +x)", filepath.Base(path))
	}
	if by, ok := Interpreters[strings.ToLower(filepath.Ext(path))]; ok {
		return append(append([]string(nil), by...), path), ""
	}
	return nil, fmt.Sprintf("%s cannot be started: it has no #! line, is not a native program, and its extension names no interpreter; add a #! line (such as #!/usr/bin/env python3) or give it a known extension (%s)",
		filepath.Base(path), knownExtensions())
}

// knownExtensions lists Interpreters' keys for messages.
func knownExtensions() string {
	exts := make([]string, 0, len(Interpreters))
	for e := range Interpreters {
		exts = append(exts, e)
	}
	sort.Strings(exts)
	return strings.Join(exts, ", ")
}

// headSize is how much of a script is read to find its #! line or a
// native program's magic number.
const headSize = 256

func readHead(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b := make([]byte, headSize)
	n, _ := io.ReadFull(f, b)
	return b[:n]
}

// shebang reads a script's #! line: "#!/usr/bin/env python3" gives
// [/usr/bin/env python3].
func shebang(head []byte) []string {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return nil
	}
	line, _, _ := bytes.Cut(head[2:], []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) == 0 {
		return nil
	}
	return f
}

// native reports whether head starts like a program the kernel (or a
// loader) runs itself: ELF, Mach-O (either byte order, 32 or 64 bit, or
// universal), or a Windows PE.
func native(head []byte) bool {
	for _, magic := range []string{"\x7fELF", "\xfe\xed\xfa\xce", "\xfe\xed\xfa\xcf", "\xce\xfa\xed\xfe", "\xcf\xfa\xed\xfe", "\xca\xfe\xba\xbe", "MZ"} {
		if bytes.HasPrefix(head, []byte(magic)) {
			return true
		}
	}
	return false
}
