// Package report turns benchmark results into what people read: markdown tables, an SVG chart
// drawn by hand (no chart library), and the results section of the benchmarks README.
//
// # Usage
//
//	report.NodeplanTable(os.Stdout, results)
//	report.ComparisonTable(w, pairs)
//	report.Chart(w, pairs)
//	report.Splice("README.md", "results", table)
package report
