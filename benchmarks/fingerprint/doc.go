// Package fingerprint holds the solver's fingerprint test: every Result of the benchmark suite
// and of a seeded set of generated inputs, compared with a recorded file.
//
// A refactoring of the solver must change no plan. Benchmarks and golden tests see a few
// scenarios; this test sees 1,200 more, drawn the way real clusters and other projects'
// generators shape them — the generator of schedulingtest (with and without topology, pods as
// bare specs and as the API server returns them), its topology generator, and Karpenter's own
// benchmark mix (schedulingtest.KarpenterMix) — and it records, for each input, the plan's cost,
// its lower bound, its node count, its unplaced pods, and a hash of the whole Result (every
// claim with its type, offering and pods, every placement on existing nodes and claims, every
// unplaced pod with its reason code and message).
//
// # Usage
//
//	cd benchmarks && go test ./fingerprint            # compare
//	cd benchmarks && go test ./fingerprint -update    # re-record testdata/results.txt
//
// A line that differs names its input, so a commit that moves plans can say which moved and
// why. Under the race detector (CI's run) and -short, the full-size suite and three generated
// inputs in four are left out — the race detector makes the solver about ten times slower —
// and every input that is solved is still compared with its recorded line; run it without
// -race (as the command above does) before landing a change to the solver.
//
// The package has no non-test code but this doc.
package fingerprint
