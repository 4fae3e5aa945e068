package nodeplan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// NodeClass is one provider node class read from a manifest stream (Karpenter's
// karpenter.k8s.aws/v1 EC2NodeClass, another cloud's class): which kind it is, its name, and
// what the kind's decoder made of its spec.
type NodeClass struct {
	APIVersion, Kind, Name string
	// Spec is the value the kind's [NodeClassKind.Decode] returned; the provider package that
	// registered the kind says its type.
	Spec any
}

// NodeClassKind tells the manifest stream how to read and write one provider's node-class kind.
// The stream itself handles what every Kubernetes object has (apiVersion, kind, metadata.name —
// a valid object name, unique per kind — and status, ignored); the kind handles the spec.
type NodeClassKind struct {
	// APIVersion and Kind identify the objects, e.g. karpenter.k8s.aws/v1 and EC2NodeClass.
	// Only an object with both is read; the same kind under another version of its group is
	// an error naming the version wanted.
	APIVersion, Kind string
	// Decode reads the spec of the object named name. It reports what it cannot read through
	// spec ([ManifestObject.Fail], and [ManifestObject.Finish] for unknown fields), and may
	// return an error besides — typically its Validate method's — whose [*FieldError]s name
	// fields by their path in the object (spec.…); the stream names the object in each and
	// drops those inside a field that already failed to read (it reads as zero). Other errors
	// are reported as they are. The value is kept only when there is no error of either kind.
	// Decode must not keep spec, and must be safe for concurrent use.
	Decode func(name string, spec *ManifestObject) (any, error)
	// Encode writes a value Decode returned as one YAML document (see [EncodeManifest]);
	// decoding its output gives the value back. It must be safe for concurrent use.
	Encode func(spec any) ([]byte, error)
}

// NodeClassKinds is a set of node-class kinds by apiVersion and kind: the stream reads the
// objects of these kinds into [Manifests.NodeClasses] and skips (see [Manifests.Skipped])
// other providers' node classes. The zero value is an empty set ready to use. It is safe for
// concurrent use; it must not be copied after first use.
//
// The root package names no provider: a provider package registers its kinds, into
// [DefaultNodeClassKinds] from an init function (cloudprovider/ec2 registers EC2NodeClass) or
// into a set its caller passes around. The default is what [DecodeManifests] reads with, as
// image.Decode knows the formats whose packages are linked in: a program that can use an
// EC2NodeClass imports cloudprovider/ec2, and so reads it. A set of its own is for callers who
// want to say exactly which kinds a stream may hold, and for tests.
type NodeClassKinds struct {
	mu    sync.RWMutex
	kinds []NodeClassKind // sorted by Kind, then APIVersion
}

// DefaultNodeClassKinds is the set [DecodeManifests], [DecodeNodePools] and [EncodeManifests]
// use. Provider packages register into it at init; nothing else changes it.
var DefaultNodeClassKinds NodeClassKinds

// Register adds k to the set. It panics — a program error, like registering a database driver
// twice — when k has no APIVersion of the form group/version, no Kind, no Decode or no Encode,
// when its Kind is one the stream reads itself (NodePool, List), or when the set holds that
// apiVersion and kind already.
func (r *NodeClassKinds) Register(k NodeClassKind) {
	group, version, ok := strings.Cut(k.APIVersion, "/")
	switch {
	case !ok || group == "" || version == "" || k.Kind == "":
		panic(fmt.Sprintf("nodeplan: NodeClassKinds.Register(%q, %q): want an apiVersion group/version and a kind", k.APIVersion, k.Kind))
	case k.Decode == nil || k.Encode == nil:
		panic(fmt.Sprintf("nodeplan: NodeClassKinds.Register(%s %s): Decode and Encode are required", k.APIVersion, k.Kind))
	case k.Kind == KindNodePool || k.Kind == "List":
		panic(fmt.Sprintf("nodeplan: NodeClassKinds.Register(%s %s): the stream reads %s itself", k.APIVersion, k.Kind, k.Kind))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i, found := slices.BinarySearchFunc(r.kinds, k, compareKinds)
	if found {
		panic(fmt.Sprintf("nodeplan: NodeClassKinds.Register(%s %s): registered twice", k.APIVersion, k.Kind))
	}
	r.kinds = slices.Insert(r.kinds, i, k)
}

func compareKinds(a, b NodeClassKind) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.APIVersion, b.APIVersion))
}

// Lookup returns the kind registered for apiVersion and kind.
func (r *NodeClassKinds) Lookup(apiVersion, kind string) (NodeClassKind, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	i, found := slices.BinarySearchFunc(r.kinds, NodeClassKind{APIVersion: apiVersion, Kind: kind}, compareKinds)
	if !found {
		return NodeClassKind{}, false
	}
	return r.kinds[i], true
}

// Kinds returns the registered kinds, sorted by kind and apiVersion.
func (r *NodeClassKinds) Kinds() []NodeClassKind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.kinds)
}

// groupOf returns the API group of an apiVersion, "" when it has none.
func groupOf(apiVersion string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return group
}

// ManifestObject is one JSON object of a manifest being decoded, as a [NodeClassKind]'s Decode
// reads it: each getter reads one key, reports a value of the wrong type or out of range as a
// [*FieldError] at the key's path (spec.kubelet.maxPods) and returns ok false, so decoding
// carries on and every problem of the input comes out at once. An absent or null key reads as
// the zero value with ok false and no error. Reading a key marks it known; [ManifestObject.Finish]
// reports the keys nobody read. A ManifestObject is valid only during the Decode call that got
// it, and is not safe for concurrent use.
type ManifestObject struct{ n *node }

// Path is the object's path in its manifest, e.g. spec.metadataOptions.
func (o *ManifestObject) Path() string { return o.n.path }

// Has reports whether key is present and not null.
func (o *ManifestObject) Has(key string) bool { return o.n.has(key) }

// Keys returns the object's keys, sorted. It marks none of them read.
func (o *ManifestObject) Keys() []string { return sortedKeys(o.n.m) }

// Str reads a string.
func (o *ManifestObject) Str(key string) (string, bool) { return o.n.str(key) }

// Strings reads a list of strings.
func (o *ManifestObject) Strings(key string) ([]string, bool) { return o.n.strings(key) }

// StringMap reads an object of strings (a null value reads as ""); nil when absent or empty.
func (o *ManifestObject) StringMap(key string) map[string]string { return o.n.stringMap(key) }

// Int reads an integer, which must lie in [lo, hi].
func (o *ManifestObject) Int(key string, lo, hi int64) (int64, bool) { return o.n.integer(key, lo, hi) }

// Bool reads a boolean; nil when absent.
func (o *ManifestObject) Bool(key string) *bool { return o.n.boolean(key) }

// Quantity reads a non-negative Kubernetes quantity, written as a string ("40Gi") or a number.
func (o *ManifestObject) Quantity(key string) (resource.Quantity, bool) {
	if !o.n.has(key) {
		o.n.get(key)
		return resource.Quantity{}, false
	}
	return o.n.w.quantity(o.n.at(key), o.n.get(key))
}

// Resources reads an object of non-negative quantities by resource name; nil when absent.
func (o *ManifestObject) Resources(key string) corev1.ResourceList { return o.n.resources(key) }

// Duration reads a non-negative Go duration ("30s", "1h30m", "720h").
func (o *ManifestObject) Duration(key string) (time.Duration, bool) { return o.n.duration(key, false) }

// Object reads the object under key; an absent one reads as empty.
func (o *ManifestObject) Object(key string) *ManifestObject { return &ManifestObject{o.n.child(key)} }

// Objects reads a list of objects.
func (o *ManifestObject) Objects(key string) ([]*ManifestObject, bool) {
	nodes, ok := o.n.objects(key)
	out := make([]*ManifestObject, len(nodes))
	for i, n := range nodes {
		out[i] = &ManifestObject{n}
	}
	return out, ok
}

// Fail reports that the value under key (value, as written; "" when there is none) is not what
// was expected, e.g. Fail("image", "img 1", "an image name: letters, digits and -").
func (o *ManifestObject) Fail(key, value, expected string) { o.n.w.fail(o.n.at(key), value, expected) }

// Finish reports every key of the object that was not read, as an unknown field. hints maps a
// key to what to say instead, for fields people often put in the wrong place.
func (o *ManifestObject) Finish(hints map[string]string) { o.n.finish(hints) }

// EncodeManifest writes one object as YAML: apiVersion, kind, metadata.name, then spec (a
// struct with yaml tags, in field order), as [NodeClassKind.Encode] writes its kind.
func EncodeManifest(apiVersion, kind, name string, spec any) ([]byte, error) {
	return marshalYAML(struct {
		APIVersion string       `yaml:"apiVersion"`
		Kind       string       `yaml:"kind"`
		Metadata   metadataYAML `yaml:"metadata"`
		Spec       any          `yaml:"spec"`
	}{apiVersion, kind, metadataYAML{Name: name}, spec})
}

// FormatDuration writes d as Karpenter manifests do: "720h", "1h30m", "30s", "Never".
func FormatDuration(d time.Duration) string { return formatDuration(d) }
