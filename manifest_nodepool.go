package nodeplan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Karpenter's defaults for fields a NodePool omits.
const (
	defaultExpireAfter = 720 * time.Hour
	maxBudgets         = 50
	maxMinValues       = 50
)

// restrictedLabels are node labels the system sets; a NodePool may not set or require them.
var restrictedLabels = []string{LabelNodePool, LabelHostname, LabelInitialized, LabelRegistered}

var budgetReasons = []DisruptionReason{ReasonEmpty, ReasonUnderutilized, ReasonDrifted}

// hints for fields found where Karpenter v1 does not have them.
var (
	templateSpecHints = map[string]string{
		"kubelet": "kubelet settings moved to the EC2NodeClass (spec.kubelet) in Karpenter v1",
	}
	disruptionHints = map[string]string{
		"expireAfter": "expireAfter moved to spec.template.spec.expireAfter in Karpenter v1",
	}
)

func decodeNodePoolSpec(w *walker, spec *node) NodePool {
	var p NodePool
	if weight, ok := spec.integer("weight", 0, 100); ok {
		p.Weight = int32(weight)
	}

	tmpl := spec.child("template")
	tmd := tmpl.child("metadata")
	p.Template.Labels = tmd.stringMap("labels")
	for _, k := range sortedKeys(p.Template.Labels) {
		checkLabel(w, tmd.at("labels"), k, p.Template.Labels[k])
	}
	p.Template.Annotations = tmd.stringMap("annotations")
	for _, k := range sortedKeys(p.Template.Annotations) {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			w.fail(tmd.at("annotations"), k, "an annotation key: "+strings.Join(msgs, "; "))
		}
	}
	tmd.finish(nil)

	ts := tmpl.child("spec")
	p.Template.Requirements = decodeRequirements(w, ts)
	p.Template.Taints = decodeTaints(w, ts, "taints")
	p.Template.StartupTaints = decodeTaints(w, ts, "startupTaints")
	p.Template.ExpireAfter = defaultExpireAfter
	if d, ok := ts.duration("expireAfter", true); ok {
		p.Template.ExpireAfter = d
	}
	p.Template.TerminationGracePeriod, _ = ts.duration("terminationGracePeriod", false)
	if ts.has("nodeClassRef") {
		ref := ts.child("nodeClassRef")
		for _, f := range []struct {
			key string
			dst *string
		}{{"group", &p.Template.NodeClassRef.Group}, {"kind", &p.Template.NodeClassRef.Kind}, {"name", &p.Template.NodeClassRef.Name}} {
			if s, _ := ref.str(f.key); s != "" {
				*f.dst = s
			} else if ref.m != nil {
				w.fail(ref.at(f.key), "", "required (e.g. group: karpenter.k8s.aws, kind: EC2NodeClass, name: default)")
			}
		}
		ref.finish(nil)
	}
	ts.finish(templateSpecHints)
	tmpl.finish(nil)

	p.Disruption = decodeDisruption(w, spec.child("disruption"))
	p.Limits = spec.resources("limits")
	if n, ok := spec.integer("replicas", 0, math.MaxInt64); ok {
		p.Replicas = &n
		// Karpenter's CRD rules for static pools.
		for _, k := range sortedKeys(p.Limits) {
			if q := p.Limits[k]; k != ResourceNodes {
				w.fail(spec.at("limits")+"."+string(k), q.String(), "only limits.nodes on a static NodePool (spec.replicas is set)")
			}
		}
		if spec.has("weight") {
			w.fail(spec.at("weight"), fmt.Sprint(p.Weight), "unset: weight is not supported on a static NodePool (spec.replicas is set)")
		}
	}
	spec.finish(nil)
	return p
}

// decodeNodePoolState reads what provisioning needs of a NodePool's server-set parts: whether
// metadata.deletionTimestamp is set, and status.conditions' Ready condition. The API server
// wrote them, so nothing else there is checked, and a shape not understood reads as unset.
func decodeNodePoolState(w *walker, p *NodePool, metadata map[string]any, status any) {
	if ts, ok := metadata["deletionTimestamp"]; ok && ts != nil {
		s, _ := ts.(string)
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			w.fail("metadata.deletionTimestamp", fmt.Sprint(ts), "an RFC 3339 time")
		} else {
			p.DeletionTimestamp = &tm
		}
	}
	st, _ := status.(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if t, _ := m["type"].(string); t != "Ready" {
			continue
		}
		p.Ready.Status = metav1.ConditionStatus(stringField(m, "status"))
		p.Ready.Reason = stringField(m, "reason")
		p.Ready.Message = stringField(m, "message")
	}
}

func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func checkLabel(w *walker, path, key, value string) {
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		w.fail(path, key, "a label key: "+strings.Join(msgs, "; "))
		return
	}
	if slices.Contains(restrictedLabels, key) {
		w.fail(path, key, "a label a NodePool may set (the system sets this one)")
		return
	}
	if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
		w.fail(path+"."+key, value, "a label value: "+strings.Join(msgs, "; "))
	}
}

func decodeRequirements(w *walker, ts *node) Requirements {
	items, _ := ts.objects("requirements")
	reqs := make([]Requirement, 0, len(items))
	for _, it := range items {
		before := len(w.errs)
		key, hasKey := it.str("key")
		op, hasOp := it.str("operator")
		values, _ := it.strings("values")
		minValues, _ := it.integer("minValues", 1, maxMinValues)
		it.finish(nil)
		if it.m == nil {
			continue
		}
		switch {
		case !hasKey || key == "":
			w.fail(it.at("key"), "", "required")
		case len(validation.IsQualifiedName(key)) > 0:
			w.fail(it.at("key"), key, "a label key: "+strings.Join(validation.IsQualifiedName(key), "; "))
		case slices.Contains(restrictedLabels, key):
			w.fail(it.at("key"), key, "a label a NodePool may constrain (the system sets this one)")
		}
		nodeOp := corev1.NodeSelectorOperator(op)
		switch nodeOp {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if raw, _ := it.list("values"); len(raw) == 0 {
				w.fail(it.at("values"), "", fmt.Sprintf("at least one value, for operator %s", op))
			}
			for j, v := range values {
				if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
					w.fail(fmt.Sprintf("%s[%d]", it.at("values"), j), v, "a label value: "+strings.Join(msgs, "; "))
				}
			}
			if nodeOp == corev1.NodeSelectorOpIn && minValues > int64(len(sortedUnique(values))) && len(values) > 0 {
				w.fail(it.at("minValues"), fmt.Sprint(minValues),
					fmt.Sprintf("at most the number of distinct values (%d)", len(sortedUnique(values))))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(values) > 0 {
				w.fail(it.at("values"), strings.Join(values, ", "), fmt.Sprintf("empty: operator %s takes no values", op))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, NodeSelectorOpGte, NodeSelectorOpLte:
			// Karpenter's NodePool validation: a single non-negative integer for all four.
			if len(values) != 1 {
				w.fail(it.at("values"), strings.Join(values, ", "), fmt.Sprintf("exactly one non-negative integer, for operator %s", op))
			} else if n, err := strconv.ParseInt(values[0], 10, 64); err != nil || n < 0 || nodeOp == NodeSelectorOpLte && n == math.MaxInt64 {
				w.fail(it.at("values[0]"), values[0], fmt.Sprintf("a non-negative integer, for operator %s", op))
			}
		default:
			if !hasOp {
				w.fail(it.at("operator"), "", "required: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte")
			} else {
				w.fail(it.at("operator"), op, "an operator: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte")
			}
		}
		if len(w.errs) > before {
			continue
		}
		r, err := NewRequirement(key, nodeOp, values...)
		if err != nil {
			w.fail(it.path, "", err.Error()) // unreachable: checked above
			continue
		}
		r.MinValues = int(minValues)
		reqs = append(reqs, r)
	}
	rs := NewRequirements(reqs...)
	for _, r := range rs.All() {
		if r.IsEmpty() {
			w.fail(ts.at("requirements"), r.Key, "a key whose requirements can be met together (together they allow no value)")
		}
	}
	return rs
}

func decodeTaints(w *walker, ts *node, key string) []corev1.Taint {
	items, _ := ts.objects(key)
	var out []corev1.Taint
	seen := map[[2]string]bool{}
	for _, it := range items {
		before := len(w.errs)
		var t corev1.Taint
		k, _ := it.str("key")
		t.Key = k
		t.Value, _ = it.str("value")
		effect, hasEffect := it.str("effect")
		t.Effect = corev1.TaintEffect(effect)
		if s, ok := it.str("timeAdded"); ok {
			if tm, err := time.Parse(time.RFC3339, s); err != nil {
				w.fail(it.at("timeAdded"), s, "an RFC 3339 time")
			} else {
				t.TimeAdded = &metav1.Time{Time: tm}
			}
		}
		it.finish(nil)
		if it.m == nil {
			continue
		}
		if k == "" {
			w.fail(it.at("key"), "", "required")
		} else if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			w.fail(it.at("key"), k, "a taint key: "+strings.Join(msgs, "; "))
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			w.fail(it.at("value"), t.Value, "a taint value: "+strings.Join(msgs, "; "))
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			if !hasEffect {
				w.fail(it.at("effect"), "", "required: NoSchedule, PreferNoSchedule or NoExecute")
			} else {
				w.fail(it.at("effect"), effect, "a taint effect: NoSchedule, PreferNoSchedule or NoExecute")
			}
		}
		if seen[[2]string{t.Key, effect}] && len(w.errs) == before {
			w.fail(it.path, TaintString(t), "unique: a taint with this key and effect is already listed")
		}
		seen[[2]string{t.Key, effect}] = true
		if len(w.errs) == before {
			out = append(out, t)
		}
	}
	return out
}

func decodeDisruption(w *walker, n *node) Disruption {
	d := Disruption{ConsolidationPolicy: ConsolidateWhenEmptyOrUnderutilized}
	if s, ok := n.str("consolidationPolicy"); ok {
		switch p := ConsolidationPolicy(s); p {
		case ConsolidateWhenEmpty, ConsolidateWhenEmptyOrUnderutilized:
			d.ConsolidationPolicy = p
		case "WhenUnderutilized":
			w.fail(n.at("consolidationPolicy"), s, "WhenEmpty or WhenEmptyOrUnderutilized (WhenUnderutilized is the v1beta1 name of WhenEmptyOrUnderutilized)")
		default:
			w.fail(n.at("consolidationPolicy"), s, "WhenEmpty or WhenEmptyOrUnderutilized")
		}
	}
	d.ConsolidateAfter, _ = n.duration("consolidateAfter", true)

	items, present := n.objects("budgets")
	if present {
		d.Budgets = make([]Budget, 0, len(items))
	}
	if len(items) > maxBudgets {
		w.fail(n.at("budgets"), "", fmt.Sprintf("at most %d budgets, got %d", maxBudgets, len(items)))
	}
	for _, it := range items {
		before := len(w.errs)
		b := Budget{Nodes: NodeCount{Value: 10, Percent: true}}
		if s, ok := it.str("nodes"); ok {
			if c, err := ParseNodeCount(s); err != nil {
				w.fail(it.at("nodes"), s, "a node count or a percentage 0-100%")
			} else {
				b.Nodes = c
			}
		}
		sched, hasSched := it.str("schedule")
		if hasSched {
			s, err := ParseSchedule(sched)
			if err != nil {
				w.fail(it.at("schedule"), sched, strings.TrimPrefix(err.Error(), fmt.Sprintf("%q is not ", sched)))
			}
			b.Schedule = s
		}
		var hasDur bool
		b.Duration, hasDur = it.duration("duration", false)
		if it.has("duration") && !hasDur {
			hasDur = true // reported already; do not also say it is missing
		}
		switch {
		case hasSched && !hasDur:
			w.fail(it.at("duration"), "", `required with a schedule: how long the budget applies after each scheduled time, e.g. "10h"`)
		case hasDur && !hasSched:
			w.fail(it.at("schedule"), "", "required with a duration: when the budget's window opens, as a cron expression")
		}
		reasons, _ := it.strings("reasons")
		for j, r := range reasons {
			if !slices.Contains(budgetReasons, DisruptionReason(r)) {
				w.fail(fmt.Sprintf("%s[%d]", it.at("reasons"), j), r, "a budgeted disruption reason: Empty, Underutilized or Drifted")
				continue
			}
			b.Reasons = append(b.Reasons, DisruptionReason(r))
		}
		it.finish(nil)
		if it.m != nil && len(w.errs) == before {
			d.Budgets = append(d.Budgets, b)
		}
	}
	n.finish(disruptionHints)
	return d
}

// EncodeNodePool writes p as a karpenter.sh/v1 NodePool manifest, with its deletionTimestamp and
// Ready condition when set. Decoding the output with
// [DecodeManifests] gives p back, except that defaults come back explicit: an empty
// consolidation policy as WhenEmptyOrUnderutilized, an ExpireAfter of 0 (never) as [Never], a
// budget's schedule as parsed; and requirements come back in the form
// [Requirements.NodeSelectorRequirements] writes them, with the same meaning. EncodeNodePool does
// not validate p: decoding its output reports whatever is invalid.
func EncodeNodePool(p NodePool) ([]byte, error) {
	doc := nodePoolYAML{APIVersion: NodePoolAPIVersion, Kind: KindNodePool, Metadata: metadataYAML{Name: p.Name}}
	s := &doc.Spec
	t := &s.Template
	if len(p.Template.Labels) > 0 || len(p.Template.Annotations) > 0 {
		t.Metadata = &templateMetadataYAML{Labels: p.Template.Labels, Annotations: p.Template.Annotations}
	}
	if ref := p.Template.NodeClassRef; ref != (NodeClassRef{}) {
		t.Spec.NodeClassRef = &nodeClassRefYAML{Group: ref.Group, Kind: ref.Kind, Name: ref.Name}
	}
	for _, r := range p.Template.Requirements.All() {
		for i, e := range r.NodeSelectorRequirements() {
			ry := requirementYAML{Key: e.Key, Operator: string(e.Operator), Values: e.Values}
			if i == 0 {
				ry.MinValues = r.MinValues
			}
			t.Spec.Requirements = append(t.Spec.Requirements, ry)
		}
	}
	t.Spec.Taints = taintsYAML(p.Template.Taints)
	t.Spec.StartupTaints = taintsYAML(p.Template.StartupTaints)
	expire := p.Template.ExpireAfter
	if expire == 0 {
		expire = Never
	}
	t.Spec.ExpireAfter = formatDuration(expire)
	if p.Template.TerminationGracePeriod != 0 {
		t.Spec.TerminationGracePeriod = formatDuration(p.Template.TerminationGracePeriod)
	}

	s.Disruption.ConsolidationPolicy = string(p.Disruption.Policy())
	s.Disruption.ConsolidateAfter = formatDuration(p.Disruption.ConsolidateAfter)
	if p.Disruption.Budgets != nil {
		budgets := make([]budgetYAML, len(p.Disruption.Budgets))
		for i, b := range p.Disruption.Budgets {
			budgets[i] = budgetYAML{Nodes: b.Nodes.String()}
			if b.Schedule != nil {
				budgets[i].Schedule = b.Schedule.String()
				budgets[i].Duration = formatDuration(b.Duration)
			} else if b.Duration != 0 {
				budgets[i].Duration = formatDuration(b.Duration)
			}
			for _, r := range b.Reasons {
				budgets[i].Reasons = append(budgets[i].Reasons, string(r))
			}
		}
		s.Disruption.Budgets = &budgets
	}
	if len(p.Limits) > 0 {
		s.Limits = make(map[string]string, len(p.Limits))
		for k, q := range p.Limits {
			s.Limits[string(k)] = q.String()
		}
	}
	s.Weight = p.Weight
	s.Replicas = p.Replicas
	if p.DeletionTimestamp != nil {
		doc.Metadata.DeletionTimestamp = p.DeletionTimestamp.UTC().Format(time.RFC3339)
	}
	if p.Ready.Status != "" {
		doc.Status = &nodePoolStatusYAML{Conditions: []conditionYAML{{Type: "Ready", Status: string(p.Ready.Status), Reason: p.Ready.Reason, Message: p.Ready.Message}}}
	}
	return marshalYAML(doc)
}

func taintsYAML(taints []corev1.Taint) []taintYAML {
	var out []taintYAML
	for _, t := range taints {
		ty := taintYAML{Key: t.Key, Value: t.Value, Effect: string(t.Effect)}
		if t.TimeAdded != nil {
			ty.TimeAdded = t.TimeAdded.UTC().Format(time.RFC3339)
		}
		out = append(out, ty)
	}
	return out
}

// The YAML shape of a NodePool, fields in the order Karpenter's documentation writes them.
type (
	nodePoolYAML struct {
		APIVersion string              `yaml:"apiVersion"`
		Kind       string              `yaml:"kind"`
		Metadata   metadataYAML        `yaml:"metadata"`
		Spec       nodePoolSpec        `yaml:"spec"`
		Status     *nodePoolStatusYAML `yaml:"status,omitempty"`
	}
	metadataYAML struct {
		Name              string `yaml:"name"`
		DeletionTimestamp string `yaml:"deletionTimestamp,omitempty"`
	}
	nodePoolStatusYAML struct {
		Conditions []conditionYAML `yaml:"conditions"`
	}
	conditionYAML struct {
		Type    string `yaml:"type"`
		Status  string `yaml:"status"`
		Reason  string `yaml:"reason,omitempty"`
		Message string `yaml:"message,omitempty"`
	}
	nodePoolSpec struct {
		Template   templateYAML      `yaml:"template"`
		Disruption disruptionYAML    `yaml:"disruption"`
		Limits     map[string]string `yaml:"limits,omitempty"`
		Weight     int32             `yaml:"weight,omitempty"`
		Replicas   *int64            `yaml:"replicas,omitempty"`
	}
	templateYAML struct {
		Metadata *templateMetadataYAML `yaml:"metadata,omitempty"`
		Spec     templateSpecYAML      `yaml:"spec"`
	}
	templateMetadataYAML struct {
		Labels      map[string]string `yaml:"labels,omitempty"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	}
	templateSpecYAML struct {
		NodeClassRef           *nodeClassRefYAML `yaml:"nodeClassRef,omitempty"`
		Requirements           []requirementYAML `yaml:"requirements,omitempty"`
		Taints                 []taintYAML       `yaml:"taints,omitempty"`
		StartupTaints          []taintYAML       `yaml:"startupTaints,omitempty"`
		ExpireAfter            string            `yaml:"expireAfter,omitempty"`
		TerminationGracePeriod string            `yaml:"terminationGracePeriod,omitempty"`
	}
	nodeClassRefYAML struct {
		Group string `yaml:"group"`
		Kind  string `yaml:"kind"`
		Name  string `yaml:"name"`
	}
	requirementYAML struct {
		Key       string   `yaml:"key"`
		Operator  string   `yaml:"operator"`
		Values    []string `yaml:"values,omitempty"`
		MinValues int      `yaml:"minValues,omitempty"`
	}
	taintYAML struct {
		Key       string `yaml:"key"`
		Value     string `yaml:"value,omitempty"`
		Effect    string `yaml:"effect"`
		TimeAdded string `yaml:"timeAdded,omitempty"`
	}
	disruptionYAML struct {
		ConsolidationPolicy string        `yaml:"consolidationPolicy,omitempty"`
		ConsolidateAfter    string        `yaml:"consolidateAfter,omitempty"`
		Budgets             *[]budgetYAML `yaml:"budgets,omitempty"`
	}
	budgetYAML struct {
		Nodes    string   `yaml:"nodes"`
		Schedule string   `yaml:"schedule,omitempty"`
		Duration string   `yaml:"duration,omitempty"`
		Reasons  []string `yaml:"reasons,omitempty"`
	}
)
