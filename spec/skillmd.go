package spec

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/fsdrun/fsd/diag"
	"github.com/fsdrun/fsd/schemas"
)

// loadSkillMD loads an Agent Skills folder's SKILL.md: YAML frontmatter
// between --- lines (the manifest) and a markdown body (the instructions).
// Unknown frontmatter keys are warnings, so a SKILL.md written for another
// product loads unchanged.
func loadSkillMD(path string, data []byte) (*Skill, diag.List) {
	if d := checkText(path, data); d != nil {
		return nil, d
	}
	front, body, d := splitFrontmatter(path, data)
	if d != nil {
		return nil, d
	}
	start := diag.Pos{File: path, Line: 1, Col: 1}
	if !hasContent(front) {
		return nil, diag.List{diag.Errorf(start, "syntax", "frontmatter is empty: name and description are required")}
	}
	root, diags := parseYAML(path, front)
	if diags != nil {
		return nil, diags
	}
	s := &Skill{File: path, Dir: filepath.Dir(path), Format: FormatSkillMD}
	diags = finish(schemas.KindSkillMD, root, path, func(d *decoder) {
		d.unknown = diag.Warning
		decodeSkill(d, root, s, skillMDKeys)
		s.ID = NormalizeID(s.Name)
		if s.Name != "" {
			checkFolderName(d, s)
		}
		text := string(body)
		if s.InstructionsFile != "" && len(bytes.TrimSpace(body)) > 0 {
			d.diags = append(d.diags, diag.Errorf(s.At("instructions-file"), "instructions", "SKILL.md has both a body and instructions-file; keep one"))
		} else if s.InstructionsFile == "" {
			s.Instructions = text
		}
		var rd diag.List
		s.Resources, rd = listResources(s.Dir, path)
		d.diags = append(d.diags, rd...)
	})
	return s, diags
}

// checkFolderName enforces the Agent Skills rule that name is the id and
// matches the folder.
func checkFolderName(d *decoder, s *Skill) {
	at := s.At("name")
	if !ValidID(s.Name) {
		d.diags = append(d.diags, diag.Diagnostic{Pos: at, Kind: "id",
			Message: "invalid name " + quote(s.Name),
			Hint:    "a SKILL.md name is the skill id: " + strings.TrimPrefix(idHint, "use ")})
		return
	}
	dir := s.Dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	// Clients load a skill whose folder is named otherwise (its name is
	// its id): a warning, as skills-ref's rule is one other clients relax.
	if folder := filepath.Base(dir); NormalizeID(folder) != s.ID {
		d.diags = append(d.diags, diag.Diagnostic{Pos: at, Kind: "id", Severity: diag.Warning,
			Message: "name " + quote(s.Name) + " does not match the folder name " + quote(folder),
			Hint:    "rename the folder or the skill; the skill's id is its name"})
	}
}

// splitFrontmatter returns the frontmatter with the file's other lines
// blanked (so YAML positions are the file's own) and the body after the
// closing --- line.
func splitFrontmatter(path string, data []byte) (front, body []byte, d diag.List) {
	start := diag.Pos{File: path, Line: 1, Col: 1}
	rest := bytes.TrimPrefix(data, []byte("\ufeff"))
	first, after, ok := cutLine(rest)
	if !isFence(first) {
		return nil, nil, diag.List{diag.Errorf(start, "frontmatter", "SKILL.md must start with a --- line opening its YAML frontmatter")}
	}
	if !ok {
		after = nil
	}
	front = append(front, '\n')
	for len(after) > 0 {
		line, next, _ := cutLine(after)
		if isFence(line) {
			return front, next, nil
		}
		front = append(front, line...)
		front = append(front, '\n')
		after = next
	}
	return nil, nil, diag.List{diag.Errorf(start, "frontmatter", "the frontmatter opened here is never closed with a --- line")}
}

func cutLine(b []byte) (line, rest []byte, found bool) {
	line, rest, found = bytes.Cut(b, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest, found
}

func isFence(line []byte) bool {
	return string(bytes.TrimRight(line, " \t")) == "---"
}
