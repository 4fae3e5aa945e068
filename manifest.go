package nodeplan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// The API version and kind of Karpenter's v1 NodePool, which this package reads and writes;
// node-class kinds are their providers' ([NodeClassKinds]).
const (
	NodePoolAPIVersion = "karpenter.sh/v1"
	KindNodePool       = "NodePool"
)

// Manifests are the objects read from Karpenter v1 YAML, each kind in document order.
type Manifests struct {
	NodePools []NodePool
	// NodeClasses are the objects of the registered node-class kinds ([NodeClassKinds]), in
	// document order.
	NodeClasses []NodeClass
	// Skipped lists the objects of kinds DecodeManifests does not read but that belong beside
	// NodePools — Karpenter's NodeOverlay, NodeClaim or CapacityBuffer, a node class of a kind
	// no registered provider reads — so a stream such as
	// `kubectl get nodepools,ec2nodeclasses,nodeoverlays -o yaml` loads. A caller can report
	// them; they are not errors.
	Skipped []SkippedObject
}

// SkippedObject is an object [DecodeManifests] left out, and why.
type SkippedObject struct {
	APIVersion, Kind, Name string
	// Where locates it in the input ("document 2", "items[3]"); empty for a single document.
	Where string
	// Reason says why it was left out and, where there is one, what reads it instead (a
	// NodeOverlay: [DecodeNodeOverlays]).
	Reason string
}

// skipReason returns why an object of this apiVersion and kind is skipped rather than rejected,
// or "" when it is an error: only known kinds that go with Karpenter's are skipped, so a typo in
// "NodePool" or in a registered node-class kind (in the group a registered kind serves) still
// fails.
func (d *manifestDecoder) skipReason(apiVersion, kind string) string {
	group, version, grouped := strings.Cut(apiVersion, "/")
	if !grouped || group == "" || version == "" {
		return "" // Karpenter's kinds all live in API groups
	}
	switch {
	case kind == "NodeOverlay" && group == "karpenter.sh":
		return "a Karpenter NodeOverlay: DecodeManifests does not read it; DecodeNodeOverlays and ApplyNodeOverlays do"
	case kind == "NodeClaim" && group == "karpenter.sh":
		return "a Karpenter NodeClaim: the record of a launch, not configuration"
	case kind == "CapacityBuffer":
		return "a CapacityBuffer: nodeplan does not provision buffers from this input"
	case strings.HasSuffix(kind, "NodeClass") && !d.servesGroup(group):
		return fmt.Sprintf("a node class of a kind no registered provider reads (%s %s); this stream reads %s", apiVersion, kind, d.kindsRead())
	}
	return ""
}

// servesGroup reports whether a registered node-class kind is in the API group.
func (d *manifestDecoder) servesGroup(group string) bool {
	return slices.ContainsFunc(d.classKinds, func(k NodeClassKind) bool { return groupOf(k.APIVersion) == group })
}

// classKind returns the registered node-class kind of this name, preferring the one of
// apiVersion's group, so an object of the right kind under the wrong version is read and told
// which version to use.
func (d *manifestDecoder) classKind(apiVersion, kind string) (NodeClassKind, bool) {
	var found NodeClassKind
	ok := false
	for _, k := range d.classKinds {
		if k.Kind != kind {
			continue
		}
		if k.APIVersion == apiVersion || groupOf(k.APIVersion) == groupOf(apiVersion) {
			return k, true
		}
		if !ok {
			found, ok = k, true
		}
	}
	return found, ok
}

// kindsRead lists what the stream reads: `NodePool (karpenter.sh/v1) or EC2NodeClass
// (karpenter.k8s.aws/v1)`.
func (d *manifestDecoder) kindsRead() string {
	names := []string{fmt.Sprintf("%s (%s)", KindNodePool, NodePoolAPIVersion)}
	for _, k := range d.classKinds {
		names = append(names, fmt.Sprintf("%s (%s)", k.Kind, k.APIVersion))
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// DecodeManifests reads karpenter.sh/v1 NodePool objects, and the node classes of the kinds
// registered in [DefaultNodeClassKinds] (karpenter.k8s.aws/v1 EC2NodeClass), from YAML or
// JSON; it is [NodeClassKinds.DecodeManifests]
// of the default set.
func DecodeManifests(data []byte) (Manifests, error) {
	return DefaultNodeClassKinds.DecodeManifests(data)
}

// DecodeManifests reads karpenter.sh/v1 NodePool objects and the node classes of the kinds in
// r from YAML or JSON, split with apimachinery's readers as kubectl splits them: one document or
// many separated by "---" lines, a stream of JSON objects, and "kind: List" documents as
// `kubectl get -o yaml|json` writes them (status and server-set metadata are ignored). Empty
// documents are skipped. Objects that go with Karpenter's but that this package does not read
// (a NodeOverlay, a node class of a kind not in r) are listed in [Manifests.Skipped]; any other
// kind or API version is an error naming the document and the kind.
//
// Every problem in the input is reported at once, joined with errors.Join: YAML syntax errors per
// document, and otherwise one [*FieldError] per problem, naming the object (`NodePool "gpu"`, with
// the document number when there are several) and the field path as Karpenter spells it
// (`spec.disruption.budgets[1].nodes`). On any error the returned Manifests are empty.
//
// Checked, as Karpenter's CRD checks them: types; unknown fields (Karpenter's API server would
// prune or reject them; a field in its v1beta1 place gets a hint); metadata.name present, a valid
// object name and unique per kind; weight 0-100; label keys and values; requirement operators
// (In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte) and their values (the last four take one
// non-negative integer), spec.replicas (at least 0; then no weight and only limits.nodes),
// minValues 1-50 and, with In, at most the number of values; requirements on one key that
// contradict each other; taint effects; durations (Go syntax: "30s", "1h30m", "720h"; "Never"
// where Karpenter allows it); consolidationPolicy; budgets (nodes a count or 0-100%, a cron
// schedule and a duration set together, reasons among Empty, Underutilized and Drifted, at most
// 50); non-negative quantities in limits; and, for node classes, what their kind's
// [NodeClassKind.Decode] checks, a valid object name and names unique per kind.
//
// Fields Karpenter defaults are filled in as its API server would: consolidationPolicy
// WhenEmptyOrUnderutilized, consolidateAfter 0s, expireAfter 720h, a budget's nodes 10% (a node
// class's kind fills its own). Omitted budgets stay nil, so the library's default of one 10%
// budget applies; "budgets: []" (no limit) stays an empty slice. Of a NodePool's server-set
// parts, only what provisioning reads is kept: metadata.deletionTimestamp
// ([NodePool.DeletionTimestamp], an RFC 3339 time) and the Ready condition in status.conditions
// ([NodePool.Ready]); the rest of metadata and status is ignored.
func (r *NodeClassKinds) DecodeManifests(data []byte) (Manifests, error) {
	d := manifestDecoder{classKinds: r.Kinds()}
	docs, err := readDocuments(data)
	if err != nil {
		d.errs = append(d.errs, err)
	}
	d.numbered = len(docs) > 1
	for _, doc := range docs {
		d.document(doc)
	}
	d.checkUnique()
	if len(d.errs) > 0 {
		return Manifests{}, errors.Join(d.errs...)
	}
	return d.out, nil
}

// DecodeNodePools is [DecodeManifests] for callers that want the NodePools only. Other Karpenter
// objects in data are still checked, and their errors reported.
func DecodeNodePools(data []byte) ([]NodePool, error) {
	m, err := DecodeManifests(data)
	return m.NodePools, err
}

// EncodeManifests is [NodeClassKinds.EncodeManifests] of [DefaultNodeClassKinds].
func EncodeManifests(m Manifests) ([]byte, error) {
	return DefaultNodeClassKinds.EncodeManifests(m)
}

// EncodeManifests writes m as Karpenter v1 YAML, NodePools first, then node classes, one
// document each, separated by "---" lines; each node class is written by its kind's
// [NodeClassKind.Encode], and a class whose kind r does not hold is an error. Decoding the
// output gives m back (see [EncodeNodePool] for the exceptions). Skipped is not written.
func (r *NodeClassKinds) EncodeManifests(m Manifests) ([]byte, error) {
	var docs [][]byte
	for _, p := range m.NodePools {
		b, err := EncodeNodePool(p)
		if err != nil {
			return nil, err
		}
		docs = append(docs, b)
	}
	for _, c := range m.NodeClasses {
		k, ok := r.Lookup(c.APIVersion, c.Kind)
		if !ok {
			return nil, fmt.Errorf("nodeplan: encoding %s: no NodeClassKind registered for %s %s", objectName(c.Kind, c.Name, ""), c.APIVersion, c.Kind)
		}
		b, err := k.Encode(c.Spec)
		if err != nil {
			return nil, fmt.Errorf("nodeplan: encoding %s: %w", objectName(c.Kind, c.Name, ""), err)
		}
		docs = append(docs, b)
	}
	return bytes.Join(docs, []byte("---\n")), nil
}

// document is one YAML or JSON document of the input, with the line it starts on.
type document struct {
	number int // 1-based, counting the non-blank documents
	line   int // 1-based line of the input the document starts on
	data   []byte
}

// readDocuments splits the input with apimachinery's readers, as kubectl does: a stream of JSON
// objects when it starts with '{', else YAML documents separated by "---" lines (a JSON object is
// a YAML document too). It fails only on a JSON stream that does not parse.
func readDocuments(data []byte) ([]document, error) {
	var docs []document
	add := func(doc []byte, from int) int {
		line := 1
		if k := bytes.Index(data[from:], doc); k >= 0 {
			from += k
			line += bytes.Count(data[:from], []byte("\n")) + leadingBlankLines(doc)
			from += len(doc)
		}
		// apimachinery's reader hands back a lone "---" for a stream that opens with two.
		if t := bytes.TrimSpace(doc); len(t) > 0 && !bytes.Equal(t, []byte("---")) {
			docs = append(docs, document{number: len(docs) + 1, line: line, data: doc})
		}
		return from
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for from := 0; ; {
			var raw json.RawMessage
			if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
				return docs, nil
			} else if err != nil {
				return docs, fmt.Errorf("nodeplan: document %d: %w", len(docs)+1, err)
			}
			from = add(raw, from)
		}
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for from := 0; ; {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		} else if err != nil {
			return docs, fmt.Errorf("nodeplan: document %d: %w", len(docs)+1, err)
		}
		from = add(doc, from)
	}
}

func leadingBlankLines(doc []byte) int {
	n := 0
	for {
		i := bytes.IndexByte(doc, '\n')
		if i < 0 || len(bytes.TrimSpace(doc[:i])) > 0 {
			return n
		}
		doc, n = doc[i+1:], n+1
	}
}

// manifestDecoder accumulates the objects and errors of one input.
type manifestDecoder struct {
	classKinds []NodeClassKind // the node-class kinds read, a snapshot of the registry
	numbered   bool            // the input has several documents: name them in errors
	out        Manifests
	errs       []error
	// where each object came from, for duplicate-name errors
	poolFrom, classFrom []string
}

func (d *manifestDecoder) document(doc document) {
	j, err := sigsyaml.YAMLToJSONStrict(doc.data)
	if err != nil {
		d.errs = append(d.errs, fmt.Errorf("nodeplan: document %d (from line %d): %w", doc.number, doc.line, err))
		return
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		d.errs = append(d.errs, fmt.Errorf("nodeplan: document %d (from line %d): %w", doc.number, doc.line, err))
		return
	}
	if v == nil {
		return // empty, or comments only
	}
	where := ""
	if d.numbered {
		where = fmt.Sprintf("document %d", doc.number)
	}
	d.object(v, where, true)
}

// object decodes one Kubernetes object; where locates it ("document 2", "document 1, items[3]").
func (d *manifestDecoder) object(v any, where string, listAllowed bool) {
	label := where
	if label == "" {
		label = "document"
	}
	if _, ok := v.(map[string]any); !ok {
		d.errs = append(d.errs, &FieldError{Field: label, Value: describe(v),
			Expected: "a Kubernetes object (apiVersion, kind, metadata, spec)"})
		return
	}
	w := &walker{object: label}
	root := w.obj("", v)
	kind, _ := root.str("kind")
	apiVersion, _ := root.str("apiVersion")
	md := root.child("metadata")
	name, hasName := md.str("name")
	for k := range md.m {
		md.ignore(k) // namespace, labels, uid, managedFields…: not ours to check
	}
	root.ignore("status")
	w.object = objectName(kind, name, where)

	wantVersion := ""
	class, isClass := NodeClassKind{}, false
	switch kind {
	case KindNodePool:
		wantVersion = NodePoolAPIVersion
	case "List":
		if !listAllowed {
			w.fail("kind", kind, d.kindsRead()+" (lists do not nest)")
			break
		}
		items, _ := root.list("items")
		root.ignore("metadata")
		root.finish(nil)
		d.collect(w)
		for i, it := range items {
			d.object(it, strings.TrimPrefix(fmt.Sprintf("%s, items[%d]", where, i), ", "), false)
		}
		return
	case "":
		w.fail("kind", "", "required: "+d.kindsRead())
	default:
		if class, isClass = d.classKind(apiVersion, kind); isClass {
			wantVersion = class.APIVersion
			break
		}
		if reason := d.skipReason(apiVersion, kind); reason != "" {
			d.out.Skipped = append(d.out.Skipped, SkippedObject{APIVersion: apiVersion, Kind: kind, Name: name, Where: where, Reason: reason})
			return
		}
		w.fail("kind", kind, "a kind this stream reads: "+d.kindsRead())
	}
	if wantVersion == "" {
		d.collect(w)
		return
	}
	if apiVersion != wantVersion {
		expected := wantVersion
		if strings.HasSuffix(apiVersion, "/v1beta1") || strings.HasSuffix(apiVersion, "/v1alpha5") {
			expected += " (migrate older objects with Karpenter's v1 upgrade guide)"
		}
		w.fail("apiVersion", apiVersion, expected)
	}
	maxName := validation.DNS1123SubdomainMaxLength
	if kind == KindNodePool {
		maxName = validation.LabelValueMaxLength // the name goes into the karpenter.sh/nodepool label
	}
	if !hasName || name == "" {
		w.fail("metadata.name", "", "required")
	} else if msg := validObjectName(name, maxName); msg != "" {
		w.fail("metadata.name", name, msg)
	}

	switch {
	case kind == KindNodePool:
		p := decodeNodePoolSpec(w, root.child("spec"))
		p.Name = name
		decodeNodePoolState(w, &p, md.m, root.get("status"))
		root.finish(nil)
		if d.collect(w) {
			d.out.NodePools = append(d.out.NodePools, p)
			d.poolFrom = append(d.poolFrom, where)
		}
	case isClass:
		spec, err := class.Decode(name, &ManifestObject{root.child("spec")})
		root.finish(nil)
		w.addValidation(err)
		if d.collect(w) {
			d.out.NodeClasses = append(d.out.NodeClasses, NodeClass{APIVersion: apiVersion, Kind: kind, Name: name, Spec: spec})
			d.classFrom = append(d.classFrom, where)
		}
	}
}

// addValidation adds the errors of a Validate method, skipping those about fields that already
// failed to parse (a field that did not parse reads as zero, which would be reported again) and
// about metadata.name (checked already). An error that is not a [*FieldError] is reported as a
// problem of the spec.
func (w *walker) addValidation(err error) {
	parsed := slices.Clone(w.errs)
	for _, err := range unwrapAll(err) {
		var fe *FieldError
		if !errors.As(err, &fe) {
			w.fail("spec", "", "valid: "+err.Error())
			continue
		}
		if fe.Field == "metadata.name" {
			continue
		}
		if slices.ContainsFunc(parsed, func(p *FieldError) bool { return within(fe.Field, p.Field) }) {
			continue
		}
		e := *fe
		e.Object = w.object
		w.errs = append(w.errs, &e)
	}
}

// within reports whether field path a is b or inside it.
func within(a, b string) bool {
	return a == b || (strings.HasPrefix(a, b) && (a[len(b)] == '.' || a[len(b)] == '['))
}

// collect moves w's errors to d and reports whether there were none.
func (d *manifestDecoder) collect(w *walker) bool {
	for _, e := range w.errs {
		d.errs = append(d.errs, e)
	}
	return len(w.errs) == 0
}

func (d *manifestDecoder) checkUnique() {
	check := func(kind string, names []string, from []string) {
		first := map[string]int{}
		for i, n := range names {
			j, dup := first[n]
			if !dup {
				first[n] = i
				continue
			}
			also := "defined twice"
			if from[j] != "" {
				also = "also defined in " + from[j]
			}
			d.errs = append(d.errs, &FieldError{Object: objectName(kind, n, from[i]), Field: "metadata.name",
				Value: n, Expected: fmt.Sprintf("unique (%s %q is %s)", kind, n, also)})
		}
	}
	pools := make([]string, len(d.out.NodePools))
	for i, p := range d.out.NodePools {
		pools[i] = p.Name
	}
	check(KindNodePool, pools, d.poolFrom)
	// Node-class names are unique per kind, kinds in the order they first appear.
	var kinds []string
	names, from := map[string][]string{}, map[string][]string{}
	for i, c := range d.out.NodeClasses {
		if _, seen := names[c.Kind]; !seen {
			kinds = append(kinds, c.Kind)
		}
		names[c.Kind] = append(names[c.Kind], c.Name)
		from[c.Kind] = append(from[c.Kind], d.classFrom[i])
	}
	for _, k := range kinds {
		check(k, names[k], from[k])
	}
}

// objectName names an object for errors: `NodePool "gpu" (document 2)`.
func objectName(kind, name, where string) string {
	s := kind
	if s == "" {
		s = "object"
	}
	if name != "" {
		s += fmt.Sprintf(" %q", truncate(name))
	}
	if where != "" {
		s += " (" + where + ")"
	}
	return s
}

// validObjectName returns why name is not a valid Kubernetes object name of at most maxLen
// characters, or "" when it is.
func validObjectName(name string, maxLen int) string {
	if len(validation.IsDNS1123Subdomain(name)) > 0 || len(name) > maxLen {
		return fmt.Sprintf("a valid name: at most %d lowercase letters, digits, '-' and '.', starting and ending with a letter or digit", maxLen)
	}
	return ""
}

func unwrapAll(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// marshalYAML writes v (structs with yaml tags, in field order) as YAML.
func marshalYAML(v any) (out []byte, err error) {
	defer func() {
		// yaml.v2 reports some failures by panicking; turn them into errors.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("nodeplan: encoding YAML: %v", r)
		}
	}()
	return yaml.Marshal(v)
}
