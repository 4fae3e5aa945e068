package nodeplan

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestDecodeCatalogTestdata(t *testing.T) {
	types, err := DecodeCatalog(mustReadFile(t, "testdata/catalog.json"))
	if err != nil {
		t.Fatalf("DecodeCatalog(testdata/catalog.json): %v", err)
	}
	var names []string
	for _, it := range types {
		names = append(names, it.Name)
	}
	wantNames := []string{"c5a.2xlarge", "c6i.2xlarge", "g5.xlarge", "m5.large", "m7g.large", "t3.medium"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Fatalf("DecodeCatalog names mismatch (-want +got):\n%s", diff)
	}
	m5 := types[3]
	wantAlloc := rl("cpu", "1930m", "ephemeral-storage", "17Gi", "memory", "6903Mi", "pods", "29", "vpc.amazonaws.com/pod-eni", "9")
	if diff := cmp.Diff(wantAlloc, m5.Allocatable()); diff != "" {
		t.Errorf("m5.large Allocatable() mismatch (-want +got):\n%s", diff)
	}
	if len(m5.Offerings) != 6 {
		t.Errorf("m5.large has %d offerings, want 6", len(m5.Offerings))
	}
	best, ok := m5.Cheapest(NewRequirements(In(LabelCapacityType, "spot")))
	if want := (Offering{Zone: "us-east-1b", CapacityType: CapacityTypeSpot, Price: 0.0272, Available: true}); !ok || best != want {
		t.Errorf("m5.large Cheapest(spot) = %+v, %v; want %+v", best, ok, want)
	}
	best, ok = m5.Cheapest(NewRequirements(In(LabelCapacityType, "on-demand"), In(LabelZone, "us-east-1c")))
	if want := (Offering{Zone: "us-east-1c", CapacityType: CapacityTypeOnDemand, Price: 0.096, Available: true}); !ok || best != want {
		t.Errorf("m5.large Cheapest(on-demand, us-east-1c) = %+v, %v; want %+v", best, ok, want)
	}

	// An arm64 pod fits m7g only; a GPU pool's requirements select g5.
	arm := RequirementsFromLabels(map[string]string{LabelArch: "arm64"})
	gpuPool := NewRequirements(In(LabelInstanceType, "g5.xlarge", "g5.2xlarge"))
	for _, it := range types {
		rs := it.Requirements()
		if got, want := rs.Compatible(arm) == nil, it.Name == "m7g.large"; got != want {
			t.Errorf("%s: Compatible(arm64) = %v, want %v", it.Name, got, want)
		}
		if got, want := rs.Intersects(gpuPool), it.Name == "g5.xlarge"; got != want {
			t.Errorf("%s: Intersects(g5 pool) = %v, want %v", it.Name, got, want)
		}
	}
}

// The full catalog in shared/data, beside the repository (as in CI).
func TestDecodeCatalogShared(t *testing.T) {
	data, err := os.ReadFile("../shared/data/catalog.json")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("../shared/data/catalog.json is not beside the repository")
	}
	if err != nil {
		t.Fatal(err)
	}
	types, err := DecodeCatalog(data)
	if err != nil {
		t.Fatalf("DecodeCatalog(../shared/data/catalog.json): %v", err)
	}
	if len(types) != 164 {
		t.Errorf("DecodeCatalog(../shared/data/catalog.json) gave %d types, want 164", len(types))
	}
	for _, it := range types {
		if it.Labels[LabelInstanceType] != it.Name {
			t.Errorf("%s: label %s = %q", it.Name, LabelInstanceType, it.Labels[LabelInstanceType])
		}
		if name, ok := Fits(it.Allocatable(), it.Capacity); !ok {
			t.Errorf("%s: allocatable %s exceeds capacity", it.Name, name)
		}
		if q := it.Allocatable()[corev1.ResourceCPU]; q.Sign() <= 0 {
			t.Errorf("%s: allocatable cpu %s", it.Name, q.String())
		}
		if len(it.Offerings) == 0 {
			t.Errorf("%s: no offerings", it.Name)
		}
		for _, o := range it.Offerings {
			if !(o.Price > 0) || !o.CapacityType.Valid() || o.Zone == "" {
				t.Errorf("%s: bad offering %+v", it.Name, o)
			}
		}
	}
}

func TestDecodeCatalogErrors(t *testing.T) {
	const ok = `{"zone": "us-east-1a", "capacityType": "on-demand", "price": 0.1}`
	typ := func(name, capacity, offerings string) string {
		return `{"name": "` + name + `", "capacity": {` + capacity + `}, "offerings": [` + offerings + `]}`
	}
	catalog := func(types ...string) []byte {
		return []byte(`{"instanceTypes": [` + strings.Join(types, ", ") + `]}`)
	}
	tests := []struct {
		name string
		data []byte
		want []string // object: field=value
	}{
		{"zero price", catalog(typ("m5.large", `"cpu": "2"`, `{"zone": "us-east-1a", "capacityType": "spot", "price": 0}`)),
			[]string{"catalog instanceTypes[0] (m5.large): offerings[0].price=0"}},
		{"negative price", catalog(typ("m5.large", `"cpu": "2"`, ok+`, {"zone": "us-east-1b", "capacityType": "spot", "price": -1}`)),
			[]string{"catalog instanceTypes[0] (m5.large): offerings[1].price=-1"}},
		{"missing price", catalog(typ("c5.large", `"cpu": "2"`, `{"zone": "us-east-1a", "capacityType": "spot"}`)),
			[]string{"catalog instanceTypes[0] (c5.large): offerings[0].price="}},
		{"bad quantity", catalog(typ("r5.large", `"memory": "16 GB"`, ok)),
			[]string{"catalog instanceTypes[0] (r5.large): capacity.memory=16 GB"}},
		{"negative quantity", catalog(typ("r5.large", `"cpu": "-2"`, ok)),
			[]string{"catalog instanceTypes[0] (r5.large): capacity.cpu=-2"}},
		{"bad capacity type", catalog(typ("t3.micro", `"cpu": "2"`, `{"zone": "us-east-1a", "capacityType": "cheap", "price": 0.01}`)),
			[]string{"catalog instanceTypes[0] (t3.micro): offerings[0].capacityType=cheap"}},
		{"missing zone", catalog(typ("t3.micro", `"cpu": "2"`, `{"capacityType": "spot", "price": 0.01}`)),
			[]string{"catalog instanceTypes[0] (t3.micro): offerings[0].zone="}},
		{"missing name, duplicate name", catalog(typ("", `"cpu": "2"`, ok), typ("a", `"cpu": "1"`, ok), typ("a", `"cpu": "1"`, ok)),
			[]string{"catalog instanceTypes[0]: name=", "catalog instanceTypes[2] (a): name=a"}},
		{"allocatable above capacity", []byte(`{"instanceTypes": [{"name": "x", "capacity": {"cpu": "2"}, "allocatable": {"cpu": "3"}, "offerings": [` + ok + `]}]}`),
			[]string{"catalog instanceTypes[0] (x): allocatable.cpu=3"}},
		{"every problem at once", catalog(typ("a", `"cpu": "x"`, ok), typ("b", `"cpu": "1"`, `{"zone": "z", "capacityType": "spot", "price": 0}`)),
			[]string{"catalog instanceTypes[0] (a): capacity.cpu=x", "catalog instanceTypes[1] (b): offerings[0].price=0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			types, err := DecodeCatalog(tt.data)
			if err == nil {
				t.Fatalf("DecodeCatalog(%s) = %d types, nil; want errors %q", tt.data, len(types), tt.want)
			}
			if diff := cmp.Diff(tt.want, fieldErrors(t, err)); diff != "" {
				t.Errorf("DecodeCatalog(%s) errors mismatch (-want +got):\n%s\nerror: %v", tt.data, diff, err)
			}
		})
	}
	for _, bad := range []string{"", "[]", `{"instanceTypes": 3}`, `{}`} {
		if _, err := DecodeCatalog([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "nodeplan: catalog") {
			t.Errorf("DecodeCatalog(%q) error = %v, want a nodeplan: catalog error", bad, err)
		}
	}
}
