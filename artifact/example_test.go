package artifact_test

import (
	"encoding/json"
	"fmt"

	"github.com/fsdrun/fsd/artifact"
)

func ExampleStore_Call() {
	store := artifact.NewStore(nil) // crypto/rand handles
	body := []byte("# Weekly report\n\n## Steps\n\n1. Fetch the rows.\n2. Write the brief.\n\n## Rules\n\nNever invent figures.\n")
	handle, err := store.Spool("weekly-report", "1.2.0", body, "", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	loaded := func(skillID string) bool { return skillID == "weekly-report" }

	args, _ := json.Marshal(map[string]string{"handle": handle, "get": "section", "heading": "Steps"})
	text, skill, err := store.Call(artifact.ToolMD, args, loaded)
	fmt.Println(skill, err)
	fmt.Print(text)

	_, _, err = store.Call(artifact.ToolMD, json.RawMessage(`{"get":"headings"}`), loaded)
	fmt.Println(err)
	// Output:
	// weekly-report <nil>
	// [section "Weekly report > Steps", lines 3-7]
	// ## Steps
	//
	// 1. Fetch the rows.
	// 2. Write the brief.
	//
	// artifact_md headings: argument "handle" is required: the h_… handle of a loaded skill or a kept result
}
