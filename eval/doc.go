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
// built, recorded or replayed is the caller's (a Start). Reading the
// report as text, JUnit XML or GitHub annotations, and comparing it with
// an earlier one, are here too; drawing it as a page is not.
package eval
