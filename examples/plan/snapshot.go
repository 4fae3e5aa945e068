package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/examples/plan/internal/load"
	"github.com/nodeplan/nodeplan/scheduling"
)

// inputFiles are the files named on the command line; empty means not given.
type inputFiles struct {
	pods, nodes, nodePools, nodeClasses, nodeOverlays, catalog, daemonSets, pdbs string
	// nodeClaims are Karpenter NodeClaims: launches in flight (optional).
	nodeClaims string
	// pvcs, pvs and storageClasses describe the pods' volumes (optional).
	pvcs, pvs, storageClasses string
}

// snapshot is the cluster the input files describe.
type snapshot struct {
	pending  []*corev1.Pod // not bound to a node, sorted by key
	nodes    []clusterNode // by name
	pools    []nodeplan.NodePool
	classes  []ec2.NodeClass
	overlays []nodeplan.NodeOverlay
	// claims are the NodeClaims given, those whose node is in nodes included (inFlight picks).
	claims  []nodeplan.NodeClaim
	catalog []nodeplan.InstanceType
	// poolCatalog has a pool's own catalog where its node class changes what nodes allocate;
	// only built catalogs have it.
	poolCatalog map[string][]nodeplan.InstanceType
	// notices are assumptions made building the inputs, for the output to carry.
	notices    []string
	daemonSets []*appsv1.DaemonSet
	pdbs       []*policyv1.PodDisruptionBudget
	volumes    scheduling.Volumes
	// volumeCost is, by pool, what the EBS volumes of its EC2NodeClass cost per node and
	// hour (priceVolumes).
	volumeCost map[string]float64
}

// clusterNode is an existing node, its pods and what its labels say about it.
type clusterNode struct {
	node *corev1.Node
	pods []*corev1.Pod
	// pool is empty for a node no NodePool manages.
	pool, instanceType, zone string
	capacityType             nodeplan.CapacityType
}

// loadSnapshot reads every file given (an empty name is a file not given) and reports every
// problem in all of them at once.
func loadSnapshot(files inputFiles, l load.Loader) (*snapshot, error) {
	warn := l.Warn
	var s snapshot
	var errs []error
	var pods []*corev1.Pod
	var nodes []*corev1.Node
	var err error
	if files.pods != "" {
		if pods, err = l.Pods(files.pods); err != nil {
			errs = append(errs, err)
		}
	}
	byName := map[string]int{}
	if files.nodes != "" {
		if nodes, err = l.Nodes(files.nodes); err != nil {
			errs = append(errs, err)
		}
		for _, n := range nodes {
			cn, err := newClusterNode(files.nodes, n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			byName[n.Name] = len(s.nodes)
			s.nodes = append(s.nodes, cn)
		}
	}
	if files.nodePools != "" {
		if s.pools, err = l.NodePools(files.nodePools); err != nil {
			errs = append(errs, err)
		}
	}
	if files.catalog != "" {
		if s.catalog, err = l.Catalog(files.catalog); err != nil {
			errs = append(errs, err)
		}
	}
	if files.nodeOverlays != "" {
		if s.overlays, err = l.NodeOverlays(files.nodeOverlays); err != nil {
			errs = append(errs, err)
		}
	}
	if files.nodeClaims != "" {
		if s.claims, err = l.NodeClaims(files.nodeClaims); err != nil {
			errs = append(errs, err)
		}
	}
	if files.nodeClasses != "" {
		if s.classes, err = l.EC2NodeClasses(files.nodeClasses); err != nil {
			errs = append(errs, err)
		}
	}
	if files.daemonSets != "" {
		if s.daemonSets, err = l.DaemonSets(files.daemonSets); err != nil {
			errs = append(errs, err)
		}
	}
	if files.pdbs != "" {
		if s.pdbs, err = l.PodDisruptionBudgets(files.pdbs); err != nil {
			errs = append(errs, err)
		}
	}
	if files.pvcs != "" {
		if s.volumes.PersistentVolumeClaims, err = l.PersistentVolumeClaims(files.pvcs); err != nil {
			errs = append(errs, err)
		}
	}
	if files.pvs != "" {
		if s.volumes.PersistentVolumes, err = l.PersistentVolumes(files.pvs); err != nil {
			errs = append(errs, err)
		}
	}
	if files.storageClasses != "" {
		if s.volumes.StorageClasses, err = l.StorageClasses(files.storageClasses); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	var orphans []string
	for _, p := range pods {
		switch {
		case nodeplan.PodTerminal(p):
			// Finished pods hold no resources.
		case p.Spec.NodeName == "":
			if nodeplan.DaemonSetOf(p) == "" {
				s.pending = append(s.pending, p)
			}
		default:
			i, ok := byName[p.Spec.NodeName]
			if !ok {
				orphans = append(orphans, nodeplan.PodKey(p)+" on "+p.Spec.NodeName)
				continue
			}
			s.nodes[i].pods = append(s.nodes[i].pods, p)
		}
	}
	if len(orphans) > 0 && files.nodes != "" && warn != nil {
		warn(fmt.Sprintf("%d pods in %s are bound to nodes not in %s and are left out: %s", len(orphans), files.pods, files.nodes, abbreviate(orphans, 3)))
	}
	slices.SortFunc(s.pending, func(a, b *corev1.Pod) int { return strings.Compare(nodeplan.PodKey(a), nodeplan.PodKey(b)) })
	slices.SortFunc(s.nodes, func(a, b clusterNode) int { return strings.Compare(a.node.Name, b.node.Name) })
	return &s, nil
}

// newClusterNode reads a node's NodePool, instance type, zone and capacity type from its
// well-known labels.
func newClusterNode(file string, n *corev1.Node) (clusterNode, error) {
	cn := clusterNode{
		node:         n,
		pool:         n.Labels[nodeplan.LabelNodePool],
		instanceType: n.Labels[nodeplan.LabelInstanceType],
		zone:         n.Labels[nodeplan.LabelZone],
		capacityType: nodeplan.CapacityType(n.Labels[nodeplan.LabelCapacityType]),
	}
	if cn.capacityType != "" && !cn.capacityType.Valid() {
		return cn, &load.Error{File: file, Object: "Node " + n.Name, Err: fmt.Errorf(
			"label %s: %q is not on-demand, spot or reserved", nodeplan.LabelCapacityType, cn.capacityType)}
	}
	return cn, nil
}

// abbreviate lists the first n items and how many more there are.
func abbreviate(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
