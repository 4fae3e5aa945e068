package nodeplan

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func mustSchedule(t testing.TB, expr string) *Schedule {
	t.Helper()
	s, err := ParseSchedule(expr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustReadFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDecodeManifestsOperatorGuide(t *testing.T) {
	pools, err := DecodeNodePools(mustReadFile(t, "testdata/nodepools.yaml"))
	if err != nil {
		t.Fatalf("DecodeNodePools(testdata/nodepools.yaml): %v", err)
	}
	business := mustSchedule(t, "0 9-18 * * 1-5")
	offHours := mustSchedule(t, "0 19-23,0-8 * * *")
	want := []NodePool{
		{
			Name:   "general-spot",
			Weight: 10,
			Template: NodeClaimTemplate{
				Labels: map[string]string{"team": "platform"},
				Requirements: NewRequirements(
					In(LabelCapacityType, "spot"),
					Requirement{Key: LabelInstanceCategory, MinValues: 2}.Intersect(In(LabelInstanceCategory, "c", "m", "r")),
					Requirement{Key: LabelInstanceFamily, MinValues: 5}.Intersect(Exists(LabelInstanceFamily)),
					mustRequirement(t, LabelInstanceGeneration, corev1.NodeSelectorOpGt, "5"),
					In(LabelArch, "amd64", "arm64"),
					In(LabelZone, "us-east-1a", "us-east-1b", "us-east-1c"),
				),
				NodeClassRef:           NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				ExpireAfter:            720 * time.Hour,
				TerminationGracePeriod: 48 * time.Hour,
			},
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20"), corev1.ResourceMemory: resource.MustParse("40Gi")},
			Disruption: Disruption{
				ConsolidationPolicy: ConsolidateWhenEmptyOrUnderutilized,
				ConsolidateAfter:    time.Minute,
				Budgets: []Budget{
					{Nodes: NodeCount{Value: 0, Percent: true}, Schedule: business, Duration: time.Hour},
					{Nodes: NodeCount{Value: 50, Percent: true}, Schedule: offHours, Duration: time.Hour},
					{Nodes: NodeCount{Value: 1}, Reasons: []DisruptionReason{ReasonDrifted}},
				},
			},
		},
		{
			Name:   "general-on-demand",
			Weight: 50,
			Template: NodeClaimTemplate{
				Requirements: NewRequirements(
					In(LabelCapacityType, "on-demand"),
					In(LabelInstanceType, "c6i.2xlarge", "c6i.4xlarge", "c6a.2xlarge", "c7i.2xlarge"),
					mustRequirement(t, LabelInstanceCPU, corev1.NodeSelectorOpLt, "33"),
				),
				NodeClassRef: NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				ExpireAfter:  Never,
			},
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200"), corev1.ResourceMemory: resource.MustParse("400Gi")},
			Disruption: Disruption{
				ConsolidationPolicy: ConsolidateWhenEmpty,
				ConsolidateAfter:    5 * time.Minute,
				Budgets: []Budget{
					{Nodes: NodeCount{Value: 0, Percent: true}, Schedule: business, Duration: time.Hour},
					{Nodes: NodeCount{Value: 50, Percent: true}, Schedule: offHours, Duration: time.Hour},
				},
			},
		},
		{
			Name:   "gpu",
			Weight: 100,
			Template: NodeClaimTemplate{
				Labels:      map[string]string{"workload": "gpu"},
				Annotations: map[string]string{"example.com/owner": "ml-platform"},
				Taints:      []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
				StartupTaints: []corev1.Taint{
					{Key: "example.com/gpu-driver-not-ready", Effect: corev1.TaintEffectNoExecute},
				},
				Requirements: NewRequirements(
					In(LabelInstanceType, "g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge"),
					In(LabelCapacityType, "on-demand"),
				),
				NodeClassRef: NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "gpu"},
				ExpireAfter:  720 * time.Hour,
			},
			Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
				"nvidia.com/gpu": resource.MustParse("8"),
			},
			Disruption: Disruption{
				ConsolidationPolicy: ConsolidateWhenEmpty,
				ConsolidateAfter:    10 * time.Minute,
				Budgets: []Budget{{
					Nodes: NodeCount{Value: 0, Percent: true}, Schedule: business, Duration: time.Hour,
					Reasons: []DisruptionReason{ReasonEmpty, ReasonUnderutilized},
				}},
			},
		},
	}
	if diff := cmp.Diff(want, pools); diff != "" {
		t.Errorf("DecodeNodePools(testdata/nodepools.yaml) mismatch (-want +got):\n%s", diff)
	}
}

func mustRequirement(t testing.TB, key string, op corev1.NodeSelectorOperator, values ...string) Requirement {
	t.Helper()
	r, err := NewRequirement(key, op, values...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The budgets of the operator's guide block consolidation in business hours and allow half the
// pool off-hours.
func TestDecodedBudgetsApply(t *testing.T) {
	pools, err := DecodeNodePools(mustReadFile(t, "testdata/nodepools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	monday := func(h, m int) time.Time { return time.Date(2026, time.August, 24, h, m, 0, 0, time.UTC) }
	tests := []struct {
		pool   int
		reason DisruptionReason
		now    time.Time
		want   int
	}{
		{0, ReasonUnderutilized, monday(10, 0), 0},
		{0, ReasonUnderutilized, monday(18, 59), 0},
		{0, ReasonUnderutilized, monday(20, 0), 5},
		{0, ReasonDrifted, monday(20, 0), 1},
		{0, ReasonUnderutilized, monday(19, 0).AddDate(0, 0, 5), 5}, // Saturday: off-hours budget only
		{0, ReasonUnderutilized, monday(12, 0).AddDate(0, 0, 5), math_MaxInt},
		{2, ReasonDrifted, monday(10, 0), math_MaxInt}, // the gpu budget covers Empty and Underutilized only
		{2, ReasonEmpty, monday(10, 0), 0},
	}
	for _, tt := range tests {
		p := pools[tt.pool]
		if got := p.Disruption.AllowedDisruptions(tt.reason, 10, tt.now); got != tt.want {
			t.Errorf("%s: AllowedDisruptions(%s, 10, %v) = %d, want %d", p.Name, tt.reason, tt.now.Format(time.RFC1123), got, tt.want)
		}
	}
}

const math_MaxInt = int(^uint(0) >> 1)

func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"testdata/nodepools.yaml"} {
		m, err := DecodeManifests(mustReadFile(t, name))
		if err != nil {
			t.Fatalf("DecodeManifests(%s): %v", name, err)
		}
		for _, p := range m.NodePools {
			out, err := EncodeNodePool(p)
			if err != nil {
				t.Fatalf("EncodeNodePool(%s): %v", p.Name, err)
			}
			again, err := DecodeNodePools(out)
			if err != nil {
				t.Fatalf("DecodeNodePools(EncodeNodePool(%s)): %v\n%s", p.Name, err, out)
			}
			if diff := cmp.Diff([]NodePool{p}, again); diff != "" {
				t.Errorf("NodePool %s: decode(encode(p)) mismatch (-want +got):\n%s", p.Name, diff)
			}
		}
		out, err := EncodeManifests(m)
		if err != nil {
			t.Fatalf("EncodeManifests(%s): %v", name, err)
		}
		again, err := DecodeManifests(out)
		if err != nil {
			t.Fatalf("DecodeManifests(EncodeManifests(%s)): %v\n%s", name, err, out)
		}
		if diff := cmp.Diff(m, again); diff != "" {
			t.Errorf("%s: decode(encode(m)) mismatch (-want +got):\n%s", name, diff)
		}
	}
}

func TestEncodeNodePoolZeroValue(t *testing.T) {
	// The zero NodePool is usable; encoding makes its defaults explicit.
	out, err := EncodeNodePool(NodePool{Name: "default"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeNodePools(out)
	if err != nil {
		t.Fatalf("DecodeNodePools(EncodeNodePool(zero)): %v\n%s", err, out)
	}
	want := []NodePool{{Name: "default", Template: NodeClaimTemplate{ExpireAfter: Never},
		Disruption: Disruption{ConsolidationPolicy: ConsolidateWhenEmptyOrUnderutilized}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decode(encode(NodePool{Name: default})) mismatch (-want +got):\n%s\n%s", diff, out)
	}
}

func TestDecodeManifestsDefaults(t *testing.T) {
	got, err := DecodeNodePools([]byte(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: minimal
spec:
  template:
    spec:
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: [arm64]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []NodePool{{
		Name: "minimal",
		Template: NodeClaimTemplate{
			Requirements: NewRequirements(In(LabelArch, "arm64")),
			ExpireAfter:  720 * time.Hour,
		},
		Disruption: Disruption{ConsolidationPolicy: ConsolidateWhenEmptyOrUnderutilized},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DecodeNodePools(minimal) mismatch (-want +got):\n%s", diff)
	}
	if n := got[0].Disruption.AllowedDisruptions(ReasonEmpty, 20, time.Time{}); n != 2 {
		t.Errorf("default budget: AllowedDisruptions(Empty, 20) = %d, want 2 (10%%)", n)
	}

	// An explicit empty budget list lifts the limit; a budget without nodes is 10%.
	got, err = DecodeNodePools([]byte(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: a}
spec: {disruption: {budgets: []}}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: b}
spec: {disruption: {budgets: [{reasons: [Drifted]}], consolidateAfter: Never}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Disruption.Budgets == nil || len(got[0].Disruption.Budgets) != 0 {
		t.Errorf("budgets: [] decoded as %#v, want an empty non-nil slice", got[0].Disruption.Budgets)
	}
	wantB := []Budget{{Nodes: NodeCount{Value: 10, Percent: true}, Reasons: []DisruptionReason{ReasonDrifted}}}
	if diff := cmp.Diff(wantB, got[1].Disruption.Budgets); diff != "" {
		t.Errorf("budget without nodes mismatch (-want +got):\n%s", diff)
	}
	if got[1].Disruption.ConsolidateAfter != Never {
		t.Errorf("consolidateAfter: Never decoded as %v, want Never", got[1].Disruption.ConsolidateAfter)
	}
}

func TestDecodeManifestsDocuments(t *testing.T) {
	pool := func(name string) string {
		return "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: " + name + "\n"
	}
	tests := []struct {
		name  string
		input string
		want  []string // NodePool names
	}{
		{"empty input", "", nil},
		{"comments only", "# nothing here\n", nil},
		{"single", pool("a"), []string{"a"}},
		{"leading separator", "---\n" + pool("a"), []string{"a"}},
		{"two", pool("a") + "---\n" + pool("b"), []string{"a", "b"}},
		{"empty documents skipped", "---\n---\n" + pool("a") + "---\n\n--- # note\n" + pool("b") + "...\n", []string{"a", "b"}},
		{"CRLF", strings.ReplaceAll(pool("a")+"---\n"+pool("b"), "\n", "\r\n"), []string{"a", "b"}},
		{"JSON", `{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "j"}}`, []string{"j"}},
		{"kubectl list", "apiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n- " +
			strings.ReplaceAll(pool("a"), "\n", "\n  ") + "status: {conditions: []}\n- " + strings.ReplaceAll(pool("b"), "\n", "\n  "), []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pools, err := DecodeNodePools([]byte(tt.input))
			if err != nil {
				t.Fatalf("DecodeNodePools(%q): %v", tt.input, err)
			}
			var got []string
			for _, p := range pools {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DecodeNodePools(%q) names mismatch (-want +got):\n%s", tt.input, diff)
			}
		})
	}
}

// fieldErrors lists the field errors in err as "object: field=value", and fails on any other error.
func fieldErrors(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, e := range unwrapAll(err) {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Errorf("error %q is not a *FieldError", e)
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s=%s", fe.Object, fe.Field, fe.Value))
	}
	return out
}

func TestDecodeManifestsErrors(t *testing.T) {
	const head = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\n"
	const np = `NodePool "p"`
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"unknown kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			[]string{`Deployment "web": kind=Deployment`}},
		{"missing kind", "apiVersion: karpenter.sh/v1\nmetadata: {name: x}\n", []string{`object "x": kind=`}},
		{"old apiVersion", "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: p}\n",
			[]string{np + ": apiVersion=karpenter.sh/v1beta1"}},
		{"missing name", "apiVersion: karpenter.sh/v1\nkind: NodePool\n", []string{"NodePool: metadata.name="}},
		{"bad name", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: Big_Pool}\n",
			[]string{`NodePool "Big_Pool": metadata.name=Big_Pool`}},
		{"not an object", "- a\n- b\n", []string{": document=a list"}},
		{"weight", head + "spec: {weight: 101}\n", []string{np + ": spec.weight=101"}},
		{"deletionTimestamp", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p, deletionTimestamp: yesterday}\n",
			[]string{np + ": metadata.deletionTimestamp=yesterday"}},
		{"weight type", head + "spec: {weight: ten}\n", []string{np + ": spec.weight=ten"}},
		{"unknown operator", head + "spec: {template: {spec: {requirements: [{key: a, operator: Within, values: [x]}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].operator=Within"}},
		{"missing operator", head + "spec: {template: {spec: {requirements: [{key: a}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].operator="}},
		{"Gt non-integer", head + "spec: {template: {spec: {requirements: [{key: a, operator: Gt, values: [five]}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].values[0]=five"}},
		{"Lt two values", head + "spec: {template: {spec: {requirements: [{key: a, operator: Lt, values: ['1', '2']}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].values=1, 2"}},
		{"In without values", head + "spec: {template: {spec: {requirements: [{key: a, operator: In}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].values="}},
		{"Exists with values", head + "spec: {template: {spec: {requirements: [{key: a, operator: Exists, values: [x]}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].values=x"}},
		{"unquoted number value", head + "spec: {template: {spec: {requirements: [{key: a, operator: In, values: [1]}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].values[0]=1"}},
		{"minValues above values", head + "spec: {template: {spec: {requirements: [{key: a, operator: In, values: [x, z], minValues: 3}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].minValues=3"}},
		{"minValues zero", head + "spec: {template: {spec: {requirements: [{key: a, operator: Exists, minValues: 0}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].minValues=0"}},
		{"bad key", head + "spec: {template: {spec: {requirements: [{key: 'a b', operator: Exists}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].key=a b"}},
		{"restricted key", head + "spec: {template: {spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [x]}]}}}\n",
			[]string{np + ": spec.template.spec.requirements[0].key=karpenter.sh/nodepool"}},
		{"contradictory requirements", head + "spec: {template: {spec: {requirements: [{key: a, operator: In, values: [x]}, {key: a, operator: NotIn, values: [x]}]}}}\n",
			[]string{np + ": spec.template.spec.requirements=a"}},
		{"bad label", head + "spec: {template: {metadata: {labels: {team: 'a b'}}}}\n",
			[]string{np + ": spec.template.metadata.labels.team=a b"}},
		{"taint effect", head + "spec: {template: {spec: {taints: [{key: a, effect: NoWay}]}}}\n",
			[]string{np + ": spec.template.spec.taints[0].effect=NoWay"}},
		{"taint without key", head + "spec: {template: {spec: {startupTaints: [{effect: NoSchedule}]}}}\n",
			[]string{np + ": spec.template.spec.startupTaints[0].key="}},
		{"duplicate taint", head + "spec: {template: {spec: {taints: [{key: a, effect: NoSchedule}, {key: a, value: b, effect: NoSchedule}]}}}\n",
			[]string{np + ": spec.template.spec.taints[1]=a=b:NoSchedule"}},
		{"bad durations", head + "spec: {template: {spec: {expireAfter: 30d, terminationGracePeriod: Never}}, disruption: {consolidateAfter: -1s}}\n",
			[]string{np + ": spec.template.spec.expireAfter=30d", np + ": spec.template.spec.terminationGracePeriod=Never",
				np + ": spec.disruption.consolidateAfter=-1s"}},
		{"unknown consolidation policy", head + "spec: {disruption: {consolidationPolicy: WhenUnderutilized}}\n",
			[]string{np + ": spec.disruption.consolidationPolicy=WhenUnderutilized"}},
		{"budget nodes", head + "spec: {disruption: {budgets: [{nodes: '10%'}, {nodes: '110%'}, {nodes: '-1'}, {nodes: 5}]}}\n",
			[]string{np + ": spec.disruption.budgets[1].nodes=110%", np + ": spec.disruption.budgets[2].nodes=-1",
				np + ": spec.disruption.budgets[3].nodes=5"}},
		{"bad cron", head + "spec: {disruption: {budgets: [{schedule: '0 25 * * *', duration: 1h}, {schedule: '@sometimes', duration: 1h}]}}\n",
			[]string{np + ": spec.disruption.budgets[0].schedule=0 25 * * *", np + ": spec.disruption.budgets[1].schedule=@sometimes"}},
		{"schedule without duration", head + "spec: {disruption: {budgets: [{nodes: '0', schedule: '0 9 * * *'}, {nodes: '0', duration: 1h}]}}\n",
			[]string{np + ": spec.disruption.budgets[0].duration=", np + ": spec.disruption.budgets[1].schedule="}},
		{"budget reasons", head + "spec: {disruption: {budgets: [{reasons: [Empty, Expired]}]}}\n",
			[]string{np + ": spec.disruption.budgets[0].reasons[1]=Expired"}},
		{"negative limit", head + "spec: {limits: {cpu: -1, memory: 10Gi}}\n", []string{np + ": spec.limits.cpu=-1"}},
		{"bad quantity", head + "spec: {limits: {memory: 10GB}}\n", []string{np + ": spec.limits.memory=10GB"}},
		{"unknown fields", head + "spec: {replica: 3, template: {spec: {kubelet: {maxPods: 10}}}, disruption: {expireAfter: 720h}}\n",
			[]string{np + ": spec.template.spec.kubelet=", np + ": spec.disruption.expireAfter=", np + ": spec.replica="}},
		{"nodeClassRef incomplete", head + "spec: {template: {spec: {nodeClassRef: {name: default}}}}\n",
			[]string{np + ": spec.template.spec.nodeClassRef.group=", np + ": spec.template.spec.nodeClassRef.kind="}},
		{"wrong shapes", head + "spec: {template: [], disruption: {budgets: {nodes: '1'}}, limits: [cpu]}\n",
			[]string{np + ": spec.template=a list", np + ": spec.disruption.budgets=an object", np + ": spec.limits=a list"}},
		{"duplicate names", head + "---\n" + head, []string{`NodePool "p" (document 2): metadata.name=p`}},
		{"errors in two documents", head + "spec: {weight: -1}\n---\n" + head + "spec: {weight: 1000}\n",
			[]string{`NodePool "p" (document 1): spec.weight=-1`, `NodePool "p" (document 2): spec.weight=1000`}},
		{"list item", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: x}}\n",
			[]string{`Pod "x" (items[0]): kind=Pod`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeManifests([]byte(tt.input))
			if err == nil {
				t.Fatalf("DecodeManifests(%q) = %+v, nil; want errors %q", tt.input, m, tt.want)
			}
			if len(m.NodePools)+len(m.NodeClasses) != 0 {
				t.Errorf("DecodeManifests(%q) returned objects along with an error", tt.input)
			}
			if diff := cmp.Diff(tt.want, fieldErrors(t, err)); diff != "" {
				t.Errorf("DecodeManifests(%q) errors mismatch (-want +got):\n%s\nerror: %v", tt.input, diff, err)
			}
		})
	}
}

func TestDecodeManifestsErrorMessages(t *testing.T) {
	input := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  disruption:
    budgets:
      - nodes: "10%"
      - nodes: "110%"
`
	_, err := DecodeManifests([]byte(input))
	want := `nodeplan: NodePool "default": spec.disruption.budgets[1].nodes: "110%" is not a node count or a percentage 0-100%`
	if err == nil || err.Error() != want {
		t.Errorf("DecodeManifests(budget 110%%) error = %v, want %s", err, want)
	}

	// A YAML syntax error names the document and where it starts.
	_, err = DecodeManifests([]byte("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\n---\nkind: [\n"))
	if err == nil || !strings.Contains(err.Error(), "nodeplan: document 2 (from line 5): ") {
		t.Errorf("DecodeManifests(bad YAML in document 2) error = %v, want it to name document 2 from line 5", err)
	}
	// So does a duplicate key.
	_, err = DecodeManifests([]byte("apiVersion: karpenter.sh/v1\nkind: NodePool\nkind: NodePool\n"))
	if err == nil || !strings.Contains(err.Error(), "document 1") {
		t.Errorf("DecodeManifests(duplicate key) error = %v, want a YAML error for document 1", err)
	}
}

func TestDecodeManifestsReportsEverything(t *testing.T) {
	input := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: busy
spec:
  weight: 200
  template:
    spec:
      requirements:
        - key: karpenter.sh/capacity-type
          operator: Maybe
          values: [spot]
        - key: karpenter.k8s.aws/instance-cpu
          operator: Gt
          values: ["four"]
      taints:
        - key: dedicated
          effect: Sometimes
      expireAfter: 30 days
  disruption:
    consolidationPolicy: Aggressive
    budgets:
      - nodes: "110%"
      - nodes: "1"
        schedule: "0 9 * * *"
  limits:
    cpu: -4
`
	_, err := DecodeManifests([]byte(input))
	const np = `NodePool "busy"`
	want := []string{
		np + ": spec.weight=200",
		np + ": spec.template.spec.requirements[0].operator=Maybe",
		np + ": spec.template.spec.requirements[1].values[0]=four",
		np + ": spec.template.spec.taints[0].effect=Sometimes",
		np + ": spec.template.spec.expireAfter=30 days",
		np + ": spec.disruption.consolidationPolicy=Aggressive",
		np + ": spec.disruption.budgets[0].nodes=110%",
		np + ": spec.disruption.budgets[1].duration=",
		np + ": spec.limits.cpu=-4",
	}
	if diff := cmp.Diff(want, fieldErrors(t, err)); diff != "" {
		t.Errorf("DecodeManifests(many problems) mismatch (-want +got):\n%s\nerror: %v", diff, err)
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{30 * time.Second, "30s"},
		{90 * time.Minute, "1h30m"},
		{720 * time.Hour, "720h"},
		{time.Hour + 5*time.Second, "1h5s"},
		{1500 * time.Millisecond, "1.5s"},
		{Never, "Never"},
	}
	for _, tt := range tests {
		got := formatDuration(tt.d)
		if got != tt.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
		if tt.d != Never {
			if back, err := time.ParseDuration(got); err != nil || back != tt.d {
				t.Errorf("time.ParseDuration(formatDuration(%v)) = %v, %v; want %v", tt.d, back, err, tt.d)
			}
		}
	}
}

func ExampleDecodeNodePools() {
	pools, err := DecodeNodePools([]byte(`
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
spec:
  weight: 100
  template:
    metadata:
      labels:
        workload: gpu
    spec:
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["g5.2xlarge", "g5.4xlarge"]
      taints:
        - key: nvidia.com/gpu
          value: "true"
          effect: NoSchedule
  disruption:
    budgets:
      - nodes: "0"
        schedule: "0 9-18 * * 1-5"
        duration: 1h
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := pools[0]
	fmt.Println(p.Name, p.Weight, p.Template.Labels)
	fmt.Println(p.Template.Requirements)
	fmt.Println(TaintString(p.Template.Taints[0]))
	fmt.Println("expires after", p.Template.ExpireAfter, "policy", p.Disruption.Policy())
	monday10 := time.Date(2026, time.August, 24, 10, 0, 0, 0, time.UTC)
	fmt.Println("may disrupt at 10:00 Monday:", p.Disruption.AllowedDisruptions(ReasonUnderutilized, 4, monday10))
	// Output:
	// gpu 100 map[workload:gpu]
	// node.kubernetes.io/instance-type In [g5.2xlarge g5.4xlarge]
	// nvidia.com/gpu=true:NoSchedule
	// expires after 720h0m0s policy WhenEmptyOrUnderutilized
	// may disrupt at 10:00 Monday: 0
}

// Provisioning reads two server-set facts of a NodePool, as `kubectl get -o yaml` writes them:
// a deletionTimestamp and the Ready condition. Both come back through EncodeNodePool.
func TestDecodeNodePoolState(t *testing.T) {
	const in = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu
  deletionTimestamp: "2026-12-07T10:00:00Z"
  finalizers: [karpenter.sh/termination]
spec: {}
status:
  conditions:
  - {type: NodeClassReady, status: "False", reason: NodeClassNotFound, lastTransitionTime: "2026-12-07T09:00:00Z"}
  - {type: Ready, status: "False", reason: NodeClassNotReady, message: EC2NodeClass gpu not found, lastTransitionTime: "2026-12-07T09:00:00Z"}
  resources: {cpu: "4"}
`
	pools, err := DecodeNodePools([]byte(in))
	if err != nil {
		t.Fatalf("DecodeNodePools: %v", err)
	}
	when := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	want := Condition{Status: "False", Reason: "NodeClassNotReady", Message: "EC2NodeClass gpu not found"}
	if got := pools[0]; got.DeletionTimestamp == nil || !got.DeletionTimestamp.Equal(when) || got.Ready != want {
		t.Errorf("DecodeNodePools: DeletionTimestamp, Ready = %v, %+v, want %v, %+v", got.DeletionTimestamp, got.Ready, when, want)
	}
	out, err := EncodeNodePool(pools[0])
	if err != nil {
		t.Fatal(err)
	}
	again, err := DecodeNodePools(out)
	if err != nil {
		t.Fatalf("DecodeNodePools(EncodeNodePool(p)): %v\n%s", err, out)
	}
	if diff := cmp.Diff(pools, again); diff != "" {
		t.Errorf("decode(encode(p)) mismatch (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name string
		pool NodePool
		ok   bool
		why  string
	}{
		{"no status", NodePool{Name: "a"}, true, ""},
		{"ready", NodePool{Name: "a", Ready: Condition{Status: "True"}}, true, ""},
		{"not ready", pools[0], false, "is being deleted"},
		{"ready unknown", NodePool{Name: "a", Ready: Condition{Status: "Unknown", Reason: "AwaitingReconciliation"}}, false,
			"is not ready (status.conditions Ready=Unknown, AwaitingReconciliation): no node is launched for it until it is"},
		{"ready false", NodePool{Name: "a", Ready: want}, false,
			"is not ready (status.conditions Ready=False, NodeClassNotReady: EC2NodeClass gpu not found): no node is launched for it until it is"},
	} {
		ok, why := tc.pool.CanLaunch()
		if ok != tc.ok || !strings.HasPrefix(why, tc.why) {
			t.Errorf("NodePool(%s).CanLaunch() = %v, %q, want %v, %q", tc.name, ok, why, tc.ok, tc.why)
		}
	}
}
