package board_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/fsdrun/fsd/board"
)

// A coordinator plans a fan-out and a join, then runs the board; each task
// receives its dependencies' results.
func ExampleBoard_Run() {
	b := board.New(board.Options{Concurrency: 2})
	b.Add(board.TaskSpec{ID: "north", Goal: "Sales in the north"})
	b.Add(board.TaskSpec{ID: "south", Goal: "Sales in the south"})
	b.Add(board.TaskSpec{ID: "total", Goal: "Add them up", Deps: []string{"north", "south"}})

	rep, err := b.Run(context.Background(), func(ctx context.Context, t *board.Task, deps []board.DepResult) (string, error) {
		var got []string
		for _, d := range deps {
			got = append(got, d.TaskID+"="+d.Result)
		}
		return fmt.Sprintf("%s done [%s]", t.ID, strings.Join(got, ", ")), nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Status)
	for _, t := range rep.Tasks {
		fmt.Println(t.ID, t.Status, t.Result)
	}
	// Output:
	// drained
	// north completed north done []
	// south completed south done []
	// total completed total done [north=north done [], south=south done []]
}

// Board tools answer JSON the model can read and correct.
func ExampleBoard_CallTool() {
	b := board.New(board.Options{Roster: func() []string { return []string{"extractor"} }})
	fmt.Println(b.CallTool(context.Background(), board.ToolAddTask, []byte(`{"goal":"Collect rows","assignee":"writer"}`), nil).Text)
	fmt.Println(b.CallTool(context.Background(), board.ToolAddTask, []byte(`{"goal":"Collect rows","assignee":"extractor"}`), nil).Text)
	// Output:
	// {"ok":false,"error":"unknown_assignee","message":"new task \"Collect rows\": unknown assignee \"writer\"; the roster is [extractor] (omit assignee for the default worker)","roster":["extractor"]}
	// {"ok":true,"agent":"extractor","id":"t1","status":"pending"}
}
