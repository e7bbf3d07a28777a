package runrecord

// TaskOfFile is taskOfFile, for tests.
var TaskOfFile = taskOfFile
