// Package ui is fsd's local web view of run records: a list of runs and,
// per run, the board as a graph, a timeline of tasks and calls, tokens per
// task, and every generator's transcript with each request expandable as
// the model received it. A live run's page — running, or waiting for an
// approval, whose pending calls it lists — updates as the record grows
// (server-sent events). The same run page is written as one
// self-contained HTML file by Report, or by WriteReport a generator at a
// time. A run's page shows PageTasks tasks at a time, so a run of
// 100,000 is sent and drawn a page at a time, and the Server keeps each
// of the last few runs' index (where its tasks' and generators' lines
// are) between fetches, so a page costs its tasks.
//
// Its assets are embedded (no CDN, no build step: plain JavaScript and
// inline SVG), it reads records only through runrecord, and every byte it
// serves has known secrets masked. It never changes a record.
package ui
