package ui

// At a fixed time, so two pages of one record can be compared byte for
// byte.
var (
	WriteReportAt = writeReport
	ReportAt      = report
)
