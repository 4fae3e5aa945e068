package nodeplan

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// testClass is the spec of a made-up provider's node class, read only through the exported
// ManifestObject API, as a provider outside this module reads its own.
type testClass struct {
	Name  string
	Image string
	Disks []resource.Quantity
}

type testClassSpec struct {
	Image string         `yaml:"image,omitempty"`
	Disks []testDiskSpec `yaml:"disks,omitempty"`
}

type testDiskSpec struct {
	Size string `yaml:"size"`
}

func testKinds() *NodeClassKinds {
	r := &NodeClassKinds{}
	r.Register(NodeClassKind{
		APIVersion: "nodeclass.example.com/v1", Kind: "ExampleNodeClass",
		Decode: func(name string, spec *ManifestObject) (any, error) {
			c := testClass{Name: name}
			c.Image, _ = spec.Str("image")
			disks, _ := spec.Objects("disks")
			for _, d := range disks {
				q, _ := d.Quantity("size")
				c.Disks = append(c.Disks, q)
				d.Finish(nil)
			}
			spec.Finish(map[string]string{"imageID": "write image"})
			if c.Image == "forbidden" {
				return c, &FieldError{Field: "spec.image", Value: c.Image, Expected: "an image this cloud has"}
			}
			if c.Image == "broken" {
				return c, errors.New("the image catalog is unreadable")
			}
			return c, nil
		},
		Encode: func(spec any) ([]byte, error) {
			c, ok := spec.(testClass)
			if !ok {
				return nil, fmt.Errorf("spec is %T", spec)
			}
			s := testClassSpec{Image: c.Image}
			for _, q := range c.Disks {
				s.Disks = append(s.Disks, testDiskSpec{q.String()})
			}
			return EncodeManifest("nodeclass.example.com/v1", "ExampleNodeClass", c.Name, s)
		},
	})
	return r
}

const testClassHead = "apiVersion: nodeclass.example.com/v1\nkind: ExampleNodeClass\n"

func TestNodeClassKindsDecode(t *testing.T) {
	r := testKinds()
	input := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  template:\n    spec:\n" +
		"      nodeClassRef: {group: nodeclass.example.com, kind: ExampleNodeClass, name: small}\n---\n" +
		testClassHead + "metadata: {name: small}\nspec: {image: img-1}\n---\n" +
		testClassHead + "metadata: {name: big}\nspec: {image: img-2, disks: [{size: 100Gi}, {size: 1Ti}]}\n---\n" +
		"apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: default}\nspec: {role: r}\n"
	m, err := r.DecodeManifests([]byte(input))
	if err != nil {
		t.Fatalf("DecodeManifests: %v", err)
	}
	want := []NodeClass{
		{APIVersion: "nodeclass.example.com/v1", Kind: "ExampleNodeClass", Name: "small", Spec: testClass{Name: "small", Image: "img-1"}},
		{APIVersion: "nodeclass.example.com/v1", Kind: "ExampleNodeClass", Name: "big",
			Spec: testClass{Name: "big", Image: "img-2", Disks: []resource.Quantity{resource.MustParse("100Gi"), resource.MustParse("1Ti")}}},
	}
	if diff := cmp.Diff(want, m.NodeClasses); diff != "" {
		t.Errorf("NodeClasses mismatch (-want +got):\n%s", diff)
	}
	// The EC2NodeClass is another provider's here: this set does not hold its kind.
	if len(m.Skipped) != 1 || m.Skipped[0].Kind != "EC2NodeClass" || !strings.Contains(m.Skipped[0].Reason, "ExampleNodeClass (nodeclass.example.com/v1)") {
		t.Errorf("Skipped = %+v, want the EC2NodeClass, with a reason naming the kinds read", m.Skipped)
	}

	out, err := r.EncodeManifests(m)
	if err != nil {
		t.Fatalf("EncodeManifests: %v", err)
	}
	again, err := r.DecodeManifests(out)
	if err != nil {
		t.Fatalf("DecodeManifests(EncodeManifests(m)): %v\n%s", err, out)
	}
	m.Skipped = nil
	if diff := cmp.Diff(m, again); diff != "" {
		t.Errorf("decode(encode(m)) mismatch (-want +got):\n%s\n%s", diff, out)
	}

	var empty NodeClassKinds
	if _, err := empty.EncodeManifests(m); err == nil || !strings.Contains(err.Error(), `ExampleNodeClass "small"`) {
		t.Errorf("EncodeManifests with no kinds registered = %v, want an error naming the class", err)
	}
}

func TestNodeClassKindsDecodeErrors(t *testing.T) {
	const ec = `ExampleNodeClass "c"`
	tests := []struct {
		name, input string
		want        []string
	}{
		{"unknown field with a hint", testClassHead + "metadata: {name: c}\nspec: {imageID: x}\n", []string{ec + ": spec.imageID="}},
		{"wrong types", testClassHead + "metadata: {name: c}\nspec: {image: 5, disks: [{size: -1Gi}, {size: 1Gi, kind: ssd}]}\n",
			[]string{ec + ": spec.image=5", ec + ": spec.disks[0].size=-1Gi", ec + ": spec.disks[1].kind="}},
		{"the decoder's validation", testClassHead + "metadata: {name: c}\nspec: {image: forbidden}\n", []string{ec + ": spec.image=forbidden"}},
		{"an error that is not a field's", testClassHead + "metadata: {name: c}\nspec: {image: broken}\n", []string{ec + ": spec="}},
		{"validation skips a field that did not read", testClassHead + "metadata: {name: c}\nspec: {image: [forbidden]}\n",
			[]string{ec + ": spec.image=a list"}},
		{"missing name", testClassHead + "spec: {}\n", []string{"ExampleNodeClass: metadata.name="}},
		{"another version of the group", "apiVersion: nodeclass.example.com/v1beta1\nkind: ExampleNodeClass\nmetadata: {name: c}\nspec: {image: 5}\n",
			[]string{ec + ": apiVersion=nodeclass.example.com/v1beta1", ec + ": spec.image=5"}},
		{"a typo in a kind of a served group", "apiVersion: nodeclass.example.com/v1\nkind: ExampleNodeClas\nmetadata: {name: c}\n",
			[]string{`ExampleNodeClas "c": kind=ExampleNodeClas`}},
		{"a typo ending in NodeClass in a served group", "apiVersion: nodeclass.example.com/v1\nkind: ExmapleNodeClass\nmetadata: {name: c}\n",
			[]string{`ExmapleNodeClass "c": kind=ExmapleNodeClass`}},
		{"names unique per kind", testClassHead + "metadata: {name: c}\n---\n" + testClassHead + "metadata: {name: c}\n",
			[]string{ec + " (document 2): metadata.name=c"}},
	}
	r := testKinds()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := r.DecodeManifests([]byte(tt.input))
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

	// A NodePool and a node class may share a name; kinds are checked apart.
	shared := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: c}\n---\n" + testClassHead + "metadata: {name: c}\n"
	if _, err := r.DecodeManifests([]byte(shared)); err != nil {
		t.Errorf("DecodeManifests(a NodePool and a node class both named c) = %v, want no error", err)
	}
}

func TestNodeClassKindsRegister(t *testing.T) {
	decode := func(string, *ManifestObject) (any, error) { return nil, nil }
	encode := func(any) ([]byte, error) { return nil, nil }
	for _, tt := range []struct {
		name string
		k    NodeClassKind
	}{
		{"twice", NodeClassKind{APIVersion: "nodeclass.example.com/v1", Kind: "ExampleNodeClass", Decode: decode, Encode: encode}},
		{"no group", NodeClassKind{APIVersion: "v1", Kind: "CoreNodeClass", Decode: decode, Encode: encode}},
		{"no kind", NodeClassKind{APIVersion: "a.example.com/v1", Decode: decode, Encode: encode}},
		{"no decoder", NodeClassKind{APIVersion: "a.example.com/v1", Kind: "ANodeClass", Encode: encode}},
		{"no encoder", NodeClassKind{APIVersion: "a.example.com/v1", Kind: "ANodeClass", Decode: decode}},
		{"a kind the stream reads", NodeClassKind{APIVersion: "a.example.com/v1", Kind: KindNodePool, Decode: decode, Encode: encode}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := testKinds()
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%s %s) did not panic", tt.k.APIVersion, tt.k.Kind)
				}
			}()
			r.Register(tt.k)
		})
	}
	r := testKinds()
	r.Register(NodeClassKind{APIVersion: "nodeclass.example.com/v2", Kind: "ExampleNodeClass", Decode: decode, Encode: encode})
	r.Register(NodeClassKind{APIVersion: "a.example.com/v1", Kind: "ANodeClass", Decode: decode, Encode: encode})
	var got []string
	for _, k := range r.Kinds() {
		got = append(got, k.APIVersion+" "+k.Kind)
	}
	want := []string{"a.example.com/v1 ANodeClass", "nodeclass.example.com/v1 ExampleNodeClass", "nodeclass.example.com/v2 ExampleNodeClass"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Kinds() mismatch (-want +got):\n%s", diff)
	}
	if _, ok := r.Lookup("nodeclass.example.com/v3", "ExampleNodeClass"); ok {
		t.Errorf("Lookup(an unregistered version) found a kind")
	}
}

// Registering while streams decode is safe (run with -race).
func TestNodeClassKindsConcurrent(t *testing.T) {
	r := testKinds()
	input := []byte(testClassHead + "metadata: {name: c}\nspec: {image: i}\n")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := r.DecodeManifests(input); err != nil {
				t.Errorf("DecodeManifests: %v", err)
			}
		})
		wg.Go(func() {
			r.Register(NodeClassKind{APIVersion: fmt.Sprintf("k%d.example.com/v1", i), Kind: "KNodeClass",
				Decode: func(string, *ManifestObject) (any, error) { return nil, nil }, Encode: func(any) ([]byte, error) { return nil, nil }})
		})
	}
	wg.Wait()
	if n := len(r.Kinds()); n != 9 {
		t.Errorf("len(Kinds()) = %d after 8 registrations, want 9", n)
	}
}
