package kubesched

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

// minimiseEnv=<seed> makes TestMinimise shrink that seed's case to a small set of pods that
// still has a pod kube-scheduler refuses for the same rule, and print it: the input of a
// FINDINGS.md entry.
const minimiseEnv = "NODEPLAN_KUBESCHED_MINIMISE"

func TestMinimise(t *testing.T) {
	v := os.Getenv(minimiseEnv)
	if v == "" {
		t.Skipf("set %s=<seed> to minimise a failing seed", minimiseEnv)
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: want a seed", minimiseEnv, v)
	}
	pods := 0
	if s := os.Getenv("NODEPLAN_KUBESCHED_PODS"); s != "" {
		pods, _ = strconv.Atoi(s)
	}
	c := Generate(seed, sim.Catalog(), Config{Pods: pods})
	rule := os.Getenv("NODEPLAN_KUBESCHED_RULE") // e.g. "pod affinity", "topology spread"; empty: any refusal
	fails := func(ps []*corev1.Pod) bool {
		in := c.Input
		in.Pods = ps
		rep, err := Run(t.Context(), in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range rep.Refused {
			if strings.Contains(msg, rule) {
				return true
			}
		}
		return false
	}
	cur := c.Input.Pods
	if !fails(cur) {
		t.Fatalf("seed %d has no refusal matching %q", seed, rule)
	}
	// ddmin over the pods: drop chunks while the refusal persists.
	for n := 2; len(cur) > 1; {
		chunk := (len(cur) + n - 1) / n
		reduced := false
		for i := 0; i < len(cur); i += chunk {
			cand := slices.Concat(cur[:i], cur[min(i+chunk, len(cur)):])
			if len(cand) > 0 && fails(cand) {
				cur, reduced = cand, true
				n = max(n-1, 2)
				break
			}
		}
		if !reduced {
			if chunk == 1 {
				break
			}
			n = min(2*n, len(cur))
		}
	}
	in := c.Input
	in.Pods = cur
	rep, err := Run(t.Context(), in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range cur {
		names = append(names, nodeplan.PodKey(p))
	}
	t.Logf("seed %d minimised to %d pods: %v", seed, len(cur), names)
	for k, msg := range rep.Refused {
		t.Logf("refused %s on %s (%s): %s%s", k, rep.Planned[k], DescribeNode(rep.Nodes, rep.Planned[k]), msg, finalState(podByKey(rep.Input.Pods, k), rep.Input.Pods, rep.Bound, rep.Nodes))
	}
	t.Logf("plan:%s", DescribePlan(rep.Result))
	for _, p := range cur {
		t.Logf("%s", podYAML(p))
	}
}

func podYAML(p *corev1.Pod) string {
	b, err := yaml.Marshal(p)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
