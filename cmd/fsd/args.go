package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsdrun/fsd/spec"
)

// maxInputBytes bounds a user message read with -i - or -i @file: the
// same 4 MiB a manifest may hold.
const maxInputBytes = spec.MaxFileSize

const inputUsage = "the user message; - reads it from stdin, @FILE from a file (default: the workflow's input)"

// readInput resolves the -i flag: "-" reads stdin, "@FILE" reads FILE,
// "@@text" is the literal "@text", anything else is the message itself.
// One trailing newline (what `echo` and editors add) is dropped.
func readInput(arg string, stdin io.Reader) (string, error) {
	var (
		r    io.Reader
		from string
	)
	switch {
	case arg == "-":
		r, from = stdin, "stdin"
	case strings.HasPrefix(arg, "@@"):
		return arg[1:], nil
	case strings.HasPrefix(arg, "@"):
		name := arg[1:]
		f, err := os.Open(name)
		if err != nil {
			return "", usage("-i %s: %s (to send text that starts with @, write @@)", arg, fsMessage(err))
		}
		defer f.Close()
		r, from = f, name
	default:
		return arg, nil
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInputBytes+1))
	if err != nil {
		return "", usage("-i %s: reading %s: %v", arg, from, err)
	}
	if len(data) > maxInputBytes {
		return "", usage("-i %s: %s is over the %d-byte (4 MiB) limit", arg, from, maxInputBytes)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if strings.TrimSpace(s) == "" {
		return "", usage("-i %s: %s is empty; give the message, or leave out -i to use the workflow's input", arg, from)
	}
	return s, nil
}

// pathArg checks that a file or folder named on the command line is
// there: a typo is a usage error (exit 2), not a problem found in it.
func pathArg(path string) error {
	if _, err := os.Stat(path); err != nil {
		return usage("%s: %s", path, fsMessage(err))
	}
	return nil
}

// workflowArg resolves the WORKFLOW argument of run, context and graph. A
// path that is not there is a usage error; a folder that holds exactly one
// workflow means that workflow; a folder with none or several says what to
// do instead.
func workflowArg(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", usage("%s: %s", path, fsMessage(err))
	}
	if !st.IsDir() {
		return path, nil
	}
	var found []string
	_ = filepath.WalkDir(path, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() {
			if p != path && strings.HasPrefix(e.Name(), ".") {
				return filepath.SkipDir // .git, .fsd (run records hold resolved workflow copies)
			}
			return nil
		}
		if spec.IsWorkflowFile(p) {
			found = append(found, p)
		}
		return nil
	})
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", usage("%s is a folder with no workflow in it (*.workflow.yaml or workflow.yaml); name a workflow file, or start one with fsd init %s", path, path)
	}
	const show = 5
	list := strings.Join(found[:min(len(found), show)], ", ")
	if len(found) > show {
		list += fmt.Sprintf(" and %d more", len(found)-show)
	}
	return "", usage("%s holds %d workflows; name one: %s", path, len(found), list)
}

// fsMessage is an fs error in words, without the path the caller already
// named.
func fsMessage(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or folder"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
