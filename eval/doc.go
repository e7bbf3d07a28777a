// Package eval measures skills: whether the host reads a skill when a
// query calls for it (trigger cases), and whether a run of the workflow
// answers right (outcome cases, checked by assertions and by a judge
// model's typed verdict). It runs every case N times, each a normal run
// with its own record, and folds the runs into one Report: trigger rates
// per query, precision, recall and a confusion table per skill, pass
// rates per case, tokens and cost.
//
// The cases come from spec (an fsd *.eval.yaml, or skill-creator's
// trigger sets and evals.json, which spec reads); how a run's model is
// built, recorded or replayed is the caller's (a Start). Writing the
// report as text, JUnit XML, GitHub annotations or one self-contained
// HTML page (its template and styles embedded, like fsd report's run
// page; no script, nothing fetched), and comparing it with an earlier one
// or with a variant, are here too.
package eval
