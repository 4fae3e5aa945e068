package nodeplan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeManifests checks that no input makes the decoder panic, that every error names
// nodeplan and, for field errors, a field, and that whatever decodes survives an encode/decode
// round trip unchanged. Run it with
//
//	go test -run='^$' -fuzz=FuzzDecodeManifests -fuzztime=3m .
//
// Inputs it finds go to testdata/fuzz/FuzzDecodeManifests and run with every go test.
func FuzzDecodeManifests(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"---\n---\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\nspec: {weight: 1}\n",
		"apiVersion: v1\nkind: List\nitems: [{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: x}}]\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\nspec: {template: {spec: {requirements: [{key: a, operator: Gt, values: ['9223372036854775807']}, {key: a, operator: Lt, values: ['3']}]}}}\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: a}\nspec: {disruption: {budgets: [{nodes: '5', schedule: '@daily', duration: 10h, reasons: [Drifted]}]}, limits: {cpu: 1e3, nodes: '10'}}\n",
		"apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: c}\nspec: {amiSelectorTerms: [{alias: bottlerocket@v1.20.4}], role: r, subnetSelectorTerms: [{id: subnet-1}], securityGroupSelectorTerms: [{id: sg-1}], kubelet: {clusterDNS: [10.0.0.10], evictionSoftGracePeriod: {memory.available: 1m}, evictionSoft: {memory.available: 500Mi}}}\n",
		"a: &a [*a]\n",
		"{\"apiVersion\": \"karpenter.sh/v1\", \"kind\": \"NodePool\", \"metadata\": {\"name\": \"j\"}, \"spec\": {\"template\": {\"spec\": {\"taints\": [{\"key\": \"k\", \"effect\": \"NoSchedule\", \"timeAdded\": \"2026-01-02T03:04:05Z\"}]}}}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifests(data)
		if err != nil {
			for _, e := range unwrapAll(err) {
				if !strings.HasPrefix(e.Error(), "nodeplan: ") {
					t.Errorf("error %q does not start with nodeplan:", e)
				}
				var fe *FieldError
				if errors.As(e, &fe) && fe.Field == "" {
					t.Errorf("field error %q names no field", e)
				}
			}
			return
		}
		for _, s := range m.Skipped {
			if s.Kind == "" || s.APIVersion == "" || s.Reason == "" {
				t.Errorf("skipped object %+v lacks its kind, apiVersion or reason", s)
			}
		}
		m.Skipped = nil // the encoder writes what was read, not what was skipped
		out, err := EncodeManifests(m)
		if err != nil {
			t.Fatalf("EncodeManifests(DecodeManifests(%q)): %v", data, err)
		}
		again, err := DecodeManifests(out)
		if err != nil {
			t.Fatalf("DecodeManifests(EncodeManifests(DecodeManifests(%q))): %v\nencoded:\n%s", data, err, out)
		}
		if diff := cmp.Diff(m, again); diff != "" {
			t.Fatalf("round trip of %q mismatch (-want +got):\n%s\nencoded:\n%s", data, diff, out)
		}
	})
}
