package main

import (
	"context"
	"fmt"
	"io"

	"github.com/nodeplan/nodeplan"
)

const catalogSynopsis = "[--kubeconfig FILE | --current-context] [--nodes FILE] [--nodepools FILE] [--ec2nodeclasses FILE] [--nodepool NAME] [--region REGION] [--zones A,B] [--offline]"

// catalogCmd writes the catalog provision and disrupt would build, in the --catalog format, so
// it can be reviewed, edited (a negotiated price, a type removed) and passed back with
// --catalog.
func catalogCmd(ctx context.Context, args []string, out, stderr io.Writer) error {
	f := newFlags("catalog", catalogSynopsis, stderr)
	var files inputFiles
	f.StringVar(&files.nodes, "nodes", "", "`FILE` of Nodes, whose region and zone labels say where the cluster runs (optional)")
	f.StringVar(&files.nodePools, "nodepools", "", "`FILE` of Karpenter v1 NodePools (optional; with --nodepool)")
	f.StringVar(&files.nodeClasses, "ec2nodeclasses", "", "`FILE` of Karpenter v1 EC2NodeClasses (optional; with --nodepool)")
	var pool string
	f.StringVar(&pool, "nodepool", "", "write the catalog as NodePool `NAME`'s EC2NodeClass shapes it (kubelet settings, root volume); default: the AL2023 defaults")
	var cluster clusterFlags
	cluster.register(f)
	var catFlags catalogFlags
	catFlags.register(f)
	if err := f.parse(args); err != nil {
		return err
	}
	if pool != "" && !cluster.enabled() && (files.nodePools == "" || files.nodeClasses == "") {
		return usageErrorf("catalog: --nodepool needs --nodepools and --ec2nodeclasses, or a cluster to read them from")
	}
	loader, err := newLoader(ctx, cluster, &files, stderr)
	if err != nil {
		return err
	}
	snap, err := loadSnapshot(files, loader)
	if err != nil {
		return err
	}
	b, err := buildCatalog(ctx, catalogInput{flags: catFlags, nodes: snap.nodes, pools: snap.pools, classes: snap.classes, connect: connectAWS})
	if err != nil {
		return err
	}
	writeNotices(stderr, b)
	types := b.types
	if pool != "" {
		if !hasPool(snap.pools, pool) {
			return usageErrorf("catalog: --nodepool %q: no such NodePool", pool)
		}
		if own, ok := b.perPool[pool]; ok {
			types = own
		}
	}
	data, err := nodeplan.EncodeCatalog(types)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "plan: %d instance types for %s\n", len(types), b.region)
	_, err = out.Write(data)
	return err
}

func hasPool(pools []nodeplan.NodePool, name string) bool {
	for _, p := range pools {
		if p.Name == name {
			return true
		}
	}
	return false
}
