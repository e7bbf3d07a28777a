package trust_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/fsdrun/fsd/spec"
	"github.com/fsdrun/fsd/trust"
)

func Example() {
	base, _ := os.MkdirTemp("", "trust")
	defer os.RemoveAll(base)
	wf := filepath.Join(base, "project")
	shared := filepath.Join(base, "shared", "fetch")
	os.MkdirAll(filepath.Join(wf, "skills", "report"), 0o755)
	os.MkdirAll(shared, 0o755)

	// The workflow's own folder; `--trust DIR` would add more roots.
	roots, err := trust.New([]string{wf})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(roots.Skill(&spec.Skill{Dir: filepath.Join(wf, "skills", "report")}))
	fmt.Println(roots.Skill(&spec.Skill{Dir: filepath.Join(wf, "skills", "..", "..", "shared", "fetch")}))
	// Output:
	// true
	// false
}
