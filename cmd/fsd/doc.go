// Command fsd runs and validates LLM agent skills declared in YAML.
//
// It is thin on purpose: each subcommand (one file each: validate, schema,
// run, context, graph, runs, resume) parses flags, calls the packages that
// own the work (spec, schemas, engine, board, view, model/…), and maps the
// outcome to output and an exit code: 0 ok, 1 problems found or the run
// failed, 2 bad usage, 3 an internal failure. Errors are one line on
// stderr; answers and machine-readable output go to stdout.
package main
