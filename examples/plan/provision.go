package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

const provisionSynopsis = "(--kubeconfig FILE | --current-context | --pods FILE --nodepools FILE) [--catalog FILE] [--daemonsets FILE] [--nodes FILE] [--nodeclaims FILE] [--pvcs FILE --pvs FILE --storageclasses FILE] [--node-cost $/h] [--preference-policy Respect|CostAware|Ignore] [-o text|json|yaml|nodes]"

// provision runs the solver on the snapshot and writes its plan to out.
func provision(ctx context.Context, args []string, out, stderr io.Writer) error {
	f := newFlags("provision", provisionSynopsis, stderr)
	var files inputFiles
	format := outputFormat("text")
	f.StringVar(&files.pods, "pods", "", "`FILE` of Pods, as kubectl get pods -A -o yaml prints them; those without spec.nodeName are pending")
	f.StringVar(&files.nodePools, "nodepools", "", "`FILE` of Karpenter v1 NodePools (YAML or JSON)")
	f.StringVar(&files.nodeClasses, "ec2nodeclasses", "", "`FILE` of Karpenter v1 EC2NodeClasses, whose kubelet and volume settings shape a built catalog (optional)")
	f.StringVar(&files.catalog, "catalog", "", "`FILE` of the instance catalog: a JSON object with an instanceTypes array (default: built for the region, see plan catalog)")
	f.StringVar(&files.daemonSets, "daemonsets", "", "`FILE` of apps/v1 DaemonSets whose pods run on new nodes (optional)")
	f.StringVar(&files.nodes, "nodes", "", "`FILE` of existing Nodes, whose free room pending pods use first (optional)")
	f.StringVar(&files.nodeClaims, "nodeclaims", "", "`FILE` of Karpenter v1 NodeClaims; those whose Node is not in --nodes yet are launches in flight, whose room pending pods use first (optional)")
	f.StringVar(&files.pvcs, "pvcs", "", "`FILE` of PersistentVolumeClaims: pending pods go where their volumes are (optional)")
	f.StringVar(&files.pvs, "pvs", "", "`FILE` of PersistentVolumes, whose node affinity gives a bound claim's zone (optional)")
	f.StringVar(&files.storageClasses, "storageclasses", "", "`FILE` of storage.k8s.io/v1 StorageClasses, whose allowedTopologies give an unbound claim's zones (optional)")
	nodeCost := nodeCostFlag(f)
	prefs := preferenceFlag(f)
	f.Var(&format, "o", "output `FORMAT`: text, json, yaml (the same document as json) or nodes (each node with its utilisation, for people)")
	var src sourceFlags
	src.register(f, &files)
	if err := f.parse(args); err != nil {
		return err
	}
	snap, err := src.snapshot(ctx, f, &files, stderr, "pods", "nodepools")
	if err != nil {
		return err
	}
	in := provisionInput(snap, *nodeCost, time.Now())
	in.Options.Preferences = *prefs
	switch n := len(in.NodeClaims); n {
	case 0:
	case 1:
		snap.notices = append(snap.notices, "1 NodeClaim without a Node yet is a launch in flight: pending pods use its room first")
	default:
		snap.notices = append(snap.notices, fmt.Sprintf("%d NodeClaims without a Node yet are launches in flight: pending pods use their room first", n))
	}
	if moved := len(in.Pods) - len(snap.pending); moved > 0 {
		snap.notices = append(snap.notices, fmt.Sprintf("%d pods on nodes being deleted (deletionTimestamp or %s:NoSchedule) are planned for as pending: Karpenter provisions their room before they are evicted",
			moved, nodeplan.TaintDisrupted))
	}
	if files.pvcs != "" || files.pvs != "" || files.storageClasses != "" {
		// Pods go where their volumes are; those kube-scheduler will refuse whatever the plan
		// are left out, with the reason.
		vr := scheduling.ResolveVolumes(in.Pods, snap.volumes)
		in.VolumeZones = vr.Zones
		in.Pods = slices.Clone(in.Pods)
		for _, pr := range vr.Problems {
			snap.notices = append(snap.notices, fmt.Sprintf("pod %s left out: %s", pr.Pod, pr.Reason))
			in.Pods = slices.DeleteFunc(in.Pods, func(p *corev1.Pod) bool { return p.Namespace+"/"+p.Name == pr.Pod })
		}
	}

	start := time.Now()
	res, err := scheduling.Solve(ctx, in)
	elapsed := time.Since(start)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		// Solve fails only on input it cannot use; the loader should have caught it first.
		return badInput{fmt.Errorf("the solver rejected the input: %w", err)}
	}

	rep := newProvisionReport(res, elapsed)
	rep.Notices = append(rep.Notices, snap.notices...)
	if rep.Comparison, err = compare(ctx, snap, in.Options, res); err != nil {
		return fmt.Errorf("re-planning from scratch: %w", err)
	}
	if format == "json" || format == "yaml" {
		return writeDocument(out, format, rep)
	}
	if format == "nodes" {
		return writeNodesView(out, rep, res, in)
	}
	writeNoticesText(out, rep.Notices)
	return rep.writeText(out, res)
}

// provisionInput is the solver's input for the snapshot: its pending pods, with the existing
// nodes' free room first. The pods on nodes being deleted that Karpenter provisions replacements
// for ahead of their eviction are pending too (scheduling.DeletingNodePods, do-not-disrupt read
// at now).
func provisionInput(snap *snapshot, nodeCost float64, now time.Time) scheduling.Input {
	in := scheduling.Input{
		Pods:              snap.pending,
		NodePools:         snap.pools,
		InstanceTypes:     snap.catalog,
		PoolInstanceTypes: snap.poolCatalog,
		DaemonSets:        snap.daemonSets,
		Options:           scheduling.Options{NodeCost: snap.nodeCost(nodeCost)},
	}
	for _, n := range snap.nodes {
		in.Nodes = append(in.Nodes, scheduling.Node{Node: n.node, Pods: n.pods})
	}
	in.NodeClaims = inFlight(snap)
	moving, nodes := scheduling.DeletingNodePods(in.Nodes, now)
	if len(moving) > 0 {
		in.Pods = append(slices.Clone(in.Pods), moving...)
		in.Nodes = nodes
	}
	return in
}

// inFlight is the snapshot's NodeClaims whose Node is not among its nodes (by status.nodeName
// or providerID), as Karpenter's cluster state counts a claim and its node as one: a
// registered claim's room is the node's. Claims being deleted are kept; the solver counts them
// for their pool's limits and places nothing on them.
func inFlight(snap *snapshot) []nodeplan.NodeClaim {
	names, ids := map[string]bool{}, map[string]bool{}
	for _, n := range snap.nodes {
		names[n.node.Name] = true
		if n.node.Spec.ProviderID != "" {
			ids[n.node.Spec.ProviderID] = true
		}
	}
	var out []nodeplan.NodeClaim
	for _, c := range snap.claims {
		if names[c.Status.NodeName] || ids[c.Status.ProviderID] {
			continue
		}
		out = append(out, c)
	}
	return out
}

// preferenceFlag is --preference-policy: Karpenter's PREFERENCE_POLICY words (Respect, Ignore)
// and nodeplan's default, CostAware.
func preferenceFlag(f *flags) *scheduling.PreferencePolicy {
	p := new(scheduling.PreferencePolicy)
	f.Func("preference-policy", "how preferences (preferred affinity, ScheduleAnyway spread, PreferNoSchedule) are treated: `POLICY` "+
		"Respect (honoured whatever they cost, relaxed only where a pod could not be placed: Karpenter's PREFERENCE_POLICY=Respect, its default), "+
		"Ignore (PREFERENCE_POLICY=Ignore) or CostAware (honoured where they cost at most 5% more; the default)", func(s string) error {
		switch v := scheduling.PreferencePolicy(s); v {
		case scheduling.PreferencesRespect, scheduling.PreferencesIgnore, scheduling.PreferencesCostAware:
			*p = v
			return nil
		}
		return fmt.Errorf("%q is not Respect, Ignore or CostAware", s)
	})
	return p
}
