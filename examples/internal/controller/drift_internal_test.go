package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/controller/poolhash"
)

func TestTemplateDiff(t *testing.T) {
	day := 24 * time.Hour
	base := func() poolhash.NodeClaimTemplate {
		return poolhash.NodeClaimTemplate{
			ObjectMeta: poolhash.ObjectMeta{Labels: map[string]string{"team": "a"}},
			Spec: poolhash.NodeClaimTemplateSpec{
				NodeClassRef: &poolhash.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				ExpireAfter:  poolhash.NillableDuration{Duration: &day},
			},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*poolhash.NodeClaimTemplate)
		want   []string
	}{
		{"same", func(*poolhash.NodeClaimTemplate) {}, nil},
		{"label value", func(t *poolhash.NodeClaimTemplate) { t.ObjectMeta.Labels["team"] = "b" }, []string{`labels[team]: "a" -> "b"`}},
		{"label added and removed", func(t *poolhash.NodeClaimTemplate) {
			t.ObjectMeta.Labels = map[string]string{"tier": "web"}
		}, []string{`labels[team]: "a" -> (removed)`, `labels[tier]: (none) -> "web"`}},
		{"taint", func(t *poolhash.NodeClaimTemplate) {
			t.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		}, []string{"taints: [] -> [gpu=true:NoSchedule]"}},
		{"node class", func(t *poolhash.NodeClaimTemplate) { t.Spec.NodeClassRef.Name = "bottlerocket" },
			[]string{"nodeClassRef: karpenter.k8s.aws/EC2NodeClass/default -> karpenter.k8s.aws/EC2NodeClass/bottlerocket"}},
		{"expire never", func(t *poolhash.NodeClaimTemplate) { t.Spec.ExpireAfter = poolhash.NillableDuration{} },
			[]string{"expireAfter: 24h0m0s -> Never"}},
		{"grace period", func(t *poolhash.NodeClaimTemplate) {
			t.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		}, []string{"terminationGracePeriod: (none) -> 1h0m0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after := base()
			tc.change(&after)
			if diff := cmp.Diff(tc.want, templateDiff(base(), after)); diff != "" {
				t.Errorf("templateDiff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConsolidatable(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	three := int64(3)
	for _, tc := range []struct {
		name  string
		pool  nodeplan.NodePool
		phase Phase
		now   time.Time
		want  bool
	}{
		{"window passed", nodeplan.NodePool{Disruption: nodeplan.Disruption{ConsolidateAfter: time.Minute}}, PhaseInitialized, t0.Add(2 * time.Minute), true},
		{"window not passed", nodeplan.NodePool{Disruption: nodeplan.Disruption{ConsolidateAfter: time.Minute}}, PhaseInitialized, t0.Add(90 * time.Second), false},
		{"never", nodeplan.NodePool{Disruption: nodeplan.Disruption{ConsolidateAfter: nodeplan.Never}}, PhaseInitialized, t0.Add(time.Hour), false},
		{"static pool", nodeplan.NodePool{Replicas: &three}, PhaseInitialized, t0.Add(time.Hour), false},
		{"not initialized", nodeplan.NodePool{}, PhaseRegistered, t0.Add(time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := &Claim{Phase: tc.phase, Initialized: t0, LastPodEvent: t0.Add(time.Minute)}
			if got := consolidatable(cl, tc.pool, tc.now); got != tc.want {
				t.Errorf("consolidatable = %v, want %v", got, tc.want)
			}
		})
	}
}
