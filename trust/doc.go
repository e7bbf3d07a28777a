// Package trust decides which skills may run commands.
//
// A skill is trusted when its folder and its manifest, with every symlink
// resolved, lie inside one of the roots the user trusts: by default the
// workflow's own folder, plus each `fsd run --trust DIR`. Paths are
// compared after filepath.Abs and filepath.EvalSymlinks, so a symlinked
// skill folder that points outside a root is not trusted, and ".." in a
// path cannot climb out of one. Anything that cannot be resolved (a
// missing folder, a permission error) is untrusted: the decision fails
// closed.
//
// It owns only the decision. It does not load skills (package spec), nor
// refuse the calls of an untrusted skill's command tools (package tool,
// through tool.WithTrust), nor parse flags (cmd/fsd).
package trust
