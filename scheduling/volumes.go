package scheduling

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/nodeplan/nodeplan"
)

// Volumes is the storage a solve's pods use, as the API server holds it: what [ResolveVolumes]
// needs to tell where the pods may run. Any field may be empty.
type Volumes struct {
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	// CSINodes give existing nodes' attach limits (spec.drivers[].allocatable.count), by
	// node name.
	CSINodes []*storagev1.CSINode
}

// VolumeProblem is a pending pod kube-scheduler will not place because of its volumes — a
// claim that does not exist, is being deleted or is lost; an unbound claim without a usable
// StorageClass; volumes whose zones do not intersect.
type VolumeProblem struct {
	Pod    string // namespace/name
	Reason string
}

// ResolvedVolumes is what [ResolveVolumes] found.
type ResolvedVolumes struct {
	// Zones restricts pods to zones, keyed "namespace/name": Input.VolumeZones.
	Zones map[string][]string
	// Problems are the pods no zone will do for, in pod order. Leave them out of the solve
	// (or report them): kube-scheduler will not place them anywhere.
	Problems []VolumeProblem
}

// zoneKeys are the node labels a volume's topology names a zone by: the well-known label, its
// deprecated beta form, and the one the EBS CSI driver writes into its PersistentVolumes'
// node affinity and StorageClasses' allowedTopologies.
var zoneKeys = []string{nodeplan.LabelZone, corev1.LabelFailureDomainBetaZone, "topology.ebs.csi.aws.com/zone"}

// ResolveVolumes works out, for each pending pod, the zones its volumes allow, as kube-scheduler's
// VolumeBinding plugin and Karpenter's volume topology do: a claim bound to a PersistentVolume
// (spec.volumeName) allows the zones of the volume's required node affinity (its terms ORed); an
// unbound claim allows the zones of its StorageClass's allowedTopologies (terms ORed), or any
// zone when the class has none. A pod's zones are what all its claims allow. Generic ephemeral
// volumes are the claims "<pod>-<volume>" their controller creates, or, before it has, their
// template's StorageClass. Claims of bound pods are not looked at.
//
// Topology on keys other than the zone (e.g. the hostname of a local volume) is not expressed;
// an unbound claim whose class binds Immediately is a problem, as Karpenter treats it (the
// volume should have been provisioned already).
//
// It is pure: the caller lists the objects (a controller from its informers, the plan tool from
// files or a cluster).
func ResolveVolumes(pods []*corev1.Pod, v Volumes) ResolvedVolumes {
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for _, c := range v.PersistentVolumeClaims {
		if c != nil {
			claims[c.Namespace+"/"+c.Name] = c
		}
	}
	pvs := map[string]*corev1.PersistentVolume{}
	for _, pv := range v.PersistentVolumes {
		if pv != nil {
			pvs[pv.Name] = pv
		}
	}
	classes := map[string]*storagev1.StorageClass{}
	defaultClass := ""
	for _, sc := range v.StorageClasses {
		if sc == nil {
			continue
		}
		classes[sc.Name] = sc
		if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" && (defaultClass == "" || sc.Name < defaultClass) {
			defaultClass = sc.Name
		}
	}
	out := ResolvedVolumes{Zones: map[string][]string{}}
	for _, pod := range pods {
		if pod == nil || pod.Spec.NodeName != "" {
			continue
		}
		key := nodeplan.PodKey(pod)
		var allowed []string // nil: any zone
		restricted := false
		problem := ""
		for _, vol := range pod.Spec.Volumes {
			zones, any, err := volumeZones(pod, vol, claims, pvs, classes, defaultClass)
			if err != "" {
				problem = err
				break
			}
			if any {
				continue
			}
			if !restricted {
				allowed, restricted = zones, true
				continue
			}
			allowed = slices.DeleteFunc(allowed, func(z string) bool { return !slices.Contains(zones, z) })
		}
		switch {
		case problem != "":
			out.Problems = append(out.Problems, VolumeProblem{Pod: key, Reason: problem})
		case restricted && len(allowed) == 0:
			out.Problems = append(out.Problems, VolumeProblem{Pod: key, Reason: "its volumes allow no zone in common"})
		case restricted:
			out.Zones[key] = allowed
		}
	}
	return out
}

// volumeZones returns the sorted zones one volume of pod allows, any=true when it does not
// restrict zones, or a problem.
func volumeZones(pod *corev1.Pod, vol corev1.Volume, claims map[string]*corev1.PersistentVolumeClaim,
	pvs map[string]*corev1.PersistentVolume, classes map[string]*storagev1.StorageClass, defaultClass string) (zones []string, any bool, problem string) {
	var claimName string
	var template *corev1.PersistentVolumeClaimSpec
	switch {
	case vol.PersistentVolumeClaim != nil:
		claimName = vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil && vol.Ephemeral.VolumeClaimTemplate != nil:
		claimName = pod.Name + "-" + vol.Name
		template = &vol.Ephemeral.VolumeClaimTemplate.Spec
	default:
		return nil, true, "" // emptyDir, configMap, hostPath…: no topology
	}
	ref := "PersistentVolumeClaim " + pod.Namespace + "/" + claimName
	pvc := claims[pod.Namespace+"/"+claimName]
	var className *string
	switch {
	case pvc != nil:
		if pvc.DeletionTimestamp != nil {
			return nil, false, ref + " is being deleted"
		}
		if pvc.Status.Phase == corev1.ClaimLost {
			return nil, false, ref + " is Lost (its PersistentVolume no longer exists)"
		}
		if pvc.Spec.VolumeName != "" {
			pv := pvs[pvc.Spec.VolumeName]
			if pv == nil {
				return nil, false, fmt.Sprintf("%s is bound to PersistentVolume %s, which does not exist", ref, pvc.Spec.VolumeName)
			}
			return pvZones(pv)
		}
		className = pvc.Spec.StorageClassName
	case template != nil:
		className = template.StorageClassName
	default:
		return nil, false, ref + " does not exist"
	}
	name := defaultClass
	if className != nil {
		name = *className
	}
	return classZones(ref, name, classes)
}

// classZones returns the zones an unbound claim (ref) of StorageClass name may get a volume in:
// its class's allowed topologies, when it waits for its first consumer.
func classZones(ref, name string, classes map[string]*storagev1.StorageClass) (zones []string, any bool, problem string) {
	if name == "" {
		return nil, false, ref + " is unbound and names no StorageClass (and none is the default)"
	}
	sc := classes[name]
	if sc == nil {
		return nil, false, fmt.Sprintf("%s is unbound and its StorageClass %s does not exist", ref, name)
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode == storagev1.VolumeBindingImmediate {
		return nil, false, fmt.Sprintf("%s is unbound and its StorageClass %s binds Immediately: its volume should already exist", ref, name)
	}
	set := map[string]bool{}
	for _, term := range sc.AllowedTopologies {
		termZones, termAny := []string(nil), true
		for _, e := range term.MatchLabelExpressions {
			if slices.Contains(zoneKeys, e.Key) {
				termZones, termAny = intersectZones(termZones, termAny, e.Values), false
			}
		}
		if termAny {
			return nil, true, "" // a term without a zone allows every zone
		}
		for _, z := range termZones {
			set[z] = true
		}
	}
	if len(sc.AllowedTopologies) == 0 {
		return nil, true, ""
	}
	return sortedSet(set), false, ""
}

// pvZones returns the zones a PersistentVolume's required node affinity allows.
func pvZones(pv *corev1.PersistentVolume) ([]string, bool, string) {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil, true, ""
	}
	set := map[string]bool{}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		termZones, termAny := []string(nil), true
		for _, e := range term.MatchExpressions {
			if slices.Contains(zoneKeys, e.Key) && e.Operator == corev1.NodeSelectorOpIn {
				termZones, termAny = intersectZones(termZones, termAny, e.Values), false
			}
		}
		if termAny {
			return nil, true, ""
		}
		for _, z := range termZones {
			set[z] = true
		}
	}
	return sortedSet(set), false, ""
}

func intersectZones(have []string, any bool, vals []string) []string {
	if any {
		return slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(vals)))))
	}
	return slices.DeleteFunc(have, func(z string) bool { return !slices.Contains(vals, z) })
}

// ebsDriver is the EBS CSI driver's name, the one whose attach limit matters on EC2.
const ebsDriver = "ebs.csi.aws.com"

// AttachLimits fills each node's AttachLimit from its CSINode (the EBS CSI driver's
// allocatable count, or the only driver's when there is one) and its VolumeCount from the
// distinct claims its running pods use, so the solver never puts more volumes on a node than it
// can attach. Nodes without a CSINode are left as they are.
func AttachLimits(nodes []Node, csiNodes []*storagev1.CSINode) {
	byName := map[string]*storagev1.CSINode{}
	for _, c := range csiNodes {
		if c != nil {
			byName[c.Name] = c
		}
	}
	for i := range nodes {
		n := &nodes[i]
		if n.Node == nil {
			continue
		}
		c := byName[n.Node.Name]
		if c == nil {
			continue
		}
		limit := -1
		for _, d := range c.Spec.Drivers {
			if d.Allocatable == nil || d.Allocatable.Count == nil {
				continue
			}
			if d.Name == ebsDriver || len(c.Spec.Drivers) == 1 {
				limit = int(*d.Allocatable.Count)
			}
		}
		if limit < 0 {
			continue
		}
		n.AttachLimit = limit
		used := map[string]bool{}
		for _, p := range n.Pods {
			if nodeplan.PodTerminal(p) {
				continue
			}
			for _, v := range p.Spec.Volumes {
				switch {
				case v.PersistentVolumeClaim != nil:
					used[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] = true
				case v.Ephemeral != nil:
					used[p.Namespace+"/"+p.Name+"-"+v.Name] = true
				}
			}
		}
		// A reported count of 0 cannot be told from "no limit" in Node.AttachLimit; it stays 0.
		n.VolumeCount = len(used)
	}
}

// attachable counts a pod's volumes that take an attachment: its claims and generic ephemeral
// volumes.
func attachable(pod *corev1.Pod) int64 {
	n := int64(0)
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			n++
		}
	}
	return n
}

// applyAttachLimits caps, on existing nodes with an attach limit, the pending pods that use
// volumes: a node with room for r more attachments takes at most r/k of them, k being the
// most volumes any such pod has (exact for the usual one claim per pod, safe otherwise).
// It reports whether it added a cap.
func (p *problem) applyAttachLimits(in *Input) bool {
	var users []*group
	k := int64(0)
	for _, g := range p.groups {
		if n := attachable(g.rep); n > 0 {
			users = append(users, g)
			k = max(k, n)
		}
	}
	if len(users) == 0 {
		return false
	}
	const unlimited = int64(1) << 40
	c := &nodeCap{limit: unlimited, existing: map[string]int64{}}
	for _, n := range in.Nodes {
		if n.Node == nil || n.AttachLimit <= 0 {
			continue
		}
		room := max(int64(n.AttachLimit-n.VolumeCount), 0)
		c.existing[n.Node.Name] = unlimited - room/k
	}
	if len(c.existing) == 0 {
		return false
	}
	c.members = users
	for _, g := range users {
		g.caps = append(g.caps, c)
	}
	return true
}
