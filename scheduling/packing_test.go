package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	"testing"

	"github.com/nodeplan/nodeplan"
)

// TestPoolShareSeparable: a pool packs from the global LP's solution, without an LP of its
// own, exactly when the global LP falls apart into this pool's and the others' (every pod of
// every group it may take still pending, none of them allowed in another pool).
func TestPoolShareSeparable(t *testing.T) {
	types := []nodeplan.InstanceType{cType(2, 0.1), cType(8, 0.4)}
	pinned := func(name, pool string) []*corev1.Pod {
		ps := pods(name, 3, "500m", "")
		for _, p := range ps {
			p.Spec.NodeSelector = map[string]string{nodeplan.LabelNodePool: pool}
		}
		return ps
	}
	tests := []struct {
		name  string
		pools []string
		pods  [][]*corev1.Pod
		want  []bool // by pool
	}{
		{"one pool", []string{"a"}, [][]*corev1.Pod{pods("x", 3, "1", ""), pods("y", 2, "500m", "")}, []bool{true}},
		{"pods pinned apart", []string{"a", "b"}, [][]*corev1.Pod{pinned("x", "a"), pinned("y", "b")}, []bool{true, true}},
		{"one group in both", []string{"a", "b"}, [][]*corev1.Pod{pinned("x", "a"), pods("y", 2, "500m", "")}, []bool{false, false}},
		{"every group in both", []string{"a", "b"}, [][]*corev1.Pod{pods("x", 3, "1", "")}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{PoolInstanceTypes: map[string][]nodeplan.InstanceType{}}
			for i, name := range tt.pools {
				in.NodePools = append(in.NodePools, nodeplan.NodePool{Name: name, Weight: int32(10 - i)})
				in.PoolInstanceTypes[name] = types
			}
			for _, ps := range tt.pods {
				in.Pods = append(in.Pods, ps...)
			}
			p, err := newProblem(&in, preferences{})
			if err != nil {
				t.Fatal(err)
			}
			counts := p.pendingCounts()
			for i, pl := range p.pools {
				if _, same := p.poolShare(counts, pl, counts); same != tt.want[i] {
					t.Errorf("pool %s: separable = %v, want %v", pl.np.Name, same, tt.want[i])
				}
			}
		})
	}
}
