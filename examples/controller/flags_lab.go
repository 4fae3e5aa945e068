package main

import (
	"flag"
)

// labFlags are the flags of the lab: the simulation at scale, and (below) the simulation's
// own NodePools.
type labFlags struct {
	scale int
}

func (l *labFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&l.scale, "scale", 0, "simulation: scale a mix of Deployments to `N` pods and back to 0, and print the pending → nodeclaim and pending → running latencies (p50/p99)")
}
