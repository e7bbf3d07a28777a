// Package standin is a deterministic model whose choices follow the words
// of the request, for evaluating skills without a provider: `fsd eval
// --model standin` and the tests of package eval use it, so the trigger
// rates, precision and recall an eval reports are known in advance.
//
// The host reads the catalog skill whose description shares the most
// words with the query, when it shares at least Cutoff of them; a query
// one word short of the cut-off is a near miss, read on even-numbered
// seeds only, so repeats of one query differ as a real model's do and
// rates between 0 and 1 occur. After a read it calls each offered tool
// whose name is a word of the query, and answers with the last tool
// result (or says which skill it read). Asked for a typed answer with a
// `passed` field (an eval's judge), it passes the rubric when every
// quoted term of the rubric appears in the text under judgement.
//
// It is not a benchmark of anything and makes no attempt to do a task
// well; it is the fixed point evals are tested against.
package standin
