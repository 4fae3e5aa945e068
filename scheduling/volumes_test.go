package scheduling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

func strp(s string) *string { return &s }

func withClaim(claim string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
}

func claim(name, volume string, class *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume, StorageClassName: class}}
}

// ebsVolume is a PersistentVolume as the EBS CSI driver provisions it: node affinity on its own
// zone label.
func ebsVolume(name, zone string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.ebs.csi.aws.com/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}}
}

// A StatefulSet pod whose claim is bound to a zonal EBS volume must get a node in the volume's
// zone, or kube-scheduler refuses it and the node is waste (#13 item 8).
func TestResolveVolumesPinsAStatefulSetPodToItsVolumesZone(t *testing.T) {
	in := onePool(all3())
	in.Pods = replicas("db", 1, "1", withClaim("data-db-0"))
	vols := scheduling.Volumes{
		PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{claim("data-db-0", "pvc-123", strp("gp3"))},
		PersistentVolumes:      []*corev1.PersistentVolume{ebsVolume("pvc-123", "zone-b")},
	}
	// Without the volumes the cheapest zone wins: that is the node kube-scheduler would refuse.
	if z := placedZones(in, solveAndCheck(t, in))["default/db-0"]; z == "zone-b" {
		t.Fatalf("without volumes the pod already lands in zone-b; the case shows nothing")
	}
	r := scheduling.ResolveVolumes(in.Pods, vols)
	if diff := cmp.Diff(scheduling.ResolvedVolumes{Zones: map[string][]string{"default/db-0": {"zone-b"}}}, r); diff != "" {
		t.Fatalf("ResolveVolumes() mismatch (-want +got):\n%s", diff)
	}
	in.VolumeZones = r.Zones
	if z := placedZones(in, solveAndCheck(t, in))["default/db-0"]; z != "zone-b" {
		t.Errorf("default/db-0 placed in %q, want zone-b, its volume's zone", z)
	}
}

func TestResolveVolumes(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	class := func(name string, mode *storagev1.VolumeBindingMode, zones ...string) *storagev1.StorageClass {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: mode}
		if len(zones) > 0 {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
				{Key: nodeplan.LabelZone, Values: zones}}}}
		}
		return sc
	}
	deflt := class("standard", &wffc)
	deflt.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	vols := scheduling.Volumes{
		PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{
			claim("bound-b", "pv-b", nil), claim("bound-ab", "pv-ab", nil),
			claim("wffc-c", "", strp("zonal-c")), claim("wffc-any", "", strp("anywhere")),
			claim("immediate", "", strp("now")), claim("default-class", "", nil),
		},
		PersistentVolumes: []*corev1.PersistentVolume{ebsVolume("pv-b", "zone-b"), func() *corev1.PersistentVolume {
			pv := ebsVolume("pv-ab", "zone-a")
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"zone-a", "zone-b"}
			return pv
		}()},
		StorageClasses: []*storagev1.StorageClass{class("zonal-c", &wffc, "zone-c"), class("anywhere", &wffc), class("now", &immediate), deflt},
	}
	pod := func(name string, claims ...string) *corev1.Pod {
		p := replicas(name, 1, "1")[0]
		p.Name = name
		for _, c := range claims {
			withClaim(c)(p)
		}
		return p
	}
	eph := pod("eph")
	eph.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: strp("zonal-c")}}}}}}
	got := scheduling.ResolveVolumes([]*corev1.Pod{
		pod("b", "bound-b"), pod("ab-and-b", "bound-ab", "bound-b"), pod("c", "wffc-c"), pod("any", "wffc-any"),
		pod("b-and-c", "bound-b", "wffc-c"), pod("missing", "nope"), pod("immediate", "immediate"), pod("default", "default-class"), eph,
	}, vols)
	want := scheduling.ResolvedVolumes{
		Zones: map[string][]string{"default/b": {"zone-b"}, "default/ab-and-b": {"zone-b"}, "default/c": {"zone-c"}, "default/eph": {"zone-c"}},
		Problems: []scheduling.VolumeProblem{
			{Pod: "default/b-and-c", Reason: "its volumes allow no zone in common"},
			{Pod: "default/missing", Reason: "PersistentVolumeClaim default/nope does not exist"},
			{Pod: "default/immediate", Reason: "PersistentVolumeClaim default/immediate is unbound and its StorageClass now binds Immediately: its volume should already exist"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ResolveVolumes() mismatch (-want +got):\n%s", diff)
	}
}

// An existing node with room for one more attachment takes one pod with a volume, not three.
func TestAttachLimitsCapExistingNodes(t *testing.T) {
	in := onePool(all3())
	node := zonalNode("roomy-a", "zone-a", "4", replicas("old", 2, "100m", runningOn("roomy-a"), withClaim("old")))
	for i, p := range node.Pods {
		p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = []string{"old-0", "old-1"}[i]
	}
	in.Nodes = []scheduling.Node{node}
	three := int32(3)
	scheduling.AttachLimits(in.Nodes, []*storagev1.CSINode{{ObjectMeta: metav1.ObjectMeta{Name: "roomy-a"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "ebs.csi.aws.com", Allocatable: &storagev1.VolumeNodeResources{Count: &three}}}}}})
	if n := in.Nodes[0]; n.AttachLimit != 3 || n.VolumeCount != 2 {
		t.Fatalf("AttachLimits() = limit %d, count %d, want 3 and 2", n.AttachLimit, n.VolumeCount)
	}
	in.Pods = replicas("db", 3, "500m", withClaim("x"))
	for i, p := range in.Pods {
		p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName = []string{"db-0", "db-1", "db-2"}[i]
	}
	res := solveAndCheck(t, in)
	if got := existingPlacement(res, "roomy-a"); len(got) != 1 {
		t.Errorf("roomy-a gets %v, want exactly one pod: it can attach one more volume", got)
	}
}
