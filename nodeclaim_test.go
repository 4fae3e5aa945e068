package nodeplan

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// fillAll sets every exported field reachable from v to a non-zero value: one element in each
// slice and map, a value behind each pointer. A field added to NodeClaim later is filled too, so
// TestNodeClaimDeepCopy checks it without being told.
func fillAll(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
		return
	case reflect.TypeFor[resource.Quantity]():
		v.Set(reflect.ValueOf(resource.MustParse("1500m")))
		return
	case reflect.TypeFor[Requirements]():
		v.Set(reflect.ValueOf(NewRequirements(In("k", "v"))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillAll(t, p.Elem(), path)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillAll(t, s.Index(0), path+"[0]")
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(t, k, path+".key")
		fillAll(t, e, path+"[k]")
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fillAll(t, v.Field(i), path+"."+f.Name)
			}
		}
	default:
		t.Fatalf("fillAll: %s is a %s, which the test does not know how to fill", path, v.Kind())
	}
}

// shared reports the paths at which a and b (equal values) share mutable memory: the same map,
// slice backing array or pointer. skip lists types shared on purpose.
func shared(a, b reflect.Value, path string, skip map[reflect.Type]bool) []string {
	if skip[a.Type()] {
		return nil
	}
	var out []string
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			return []string{path}
		}
		return shared(a.Elem(), b.Elem(), path, skip)
	case reflect.Slice:
		if a.Len() == 0 || b.Len() == 0 {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			out = append(out, path)
		}
		for i := range min(a.Len(), b.Len()) {
			out = append(out, shared(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i), skip)...)
		}
	case reflect.Map:
		if a.IsNil() || b.IsNil() {
			return nil
		}
		if a.Pointer() == b.Pointer() {
			out = append(out, path)
		}
		for _, k := range a.MapKeys() {
			if bv := b.MapIndex(k); bv.IsValid() {
				out = append(out, shared(a.MapIndex(k), bv, fmt.Sprintf("%s[%v]", path, k), skip)...)
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			out = append(out, shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name, skip)...)
		}
	}
	return out
}

// zeroFields reports the exported fields reachable from v that are zero.
func zeroFields(v reflect.Value, path string) []string {
	if v.IsZero() {
		return []string{path}
	}
	var out []string
	switch v.Kind() {
	case reflect.Pointer:
		return zeroFields(v.Elem(), path)
	case reflect.Slice:
		for i := range v.Len() {
			out = append(out, zeroFields(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			out = append(out, zeroFields(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k))...)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() || v.Type() == reflect.TypeFor[resource.Quantity]() {
			return nil
		}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				out = append(out, zeroFields(v.Field(i), path+"."+f.Name)...)
			}
		}
	}
	return out
}

// DeepCopy is complete (the copy equals the original, every field set) and deep (no map, slice
// or pointer is shared but Requirements, an immutable value).
func TestNodeClaimDeepCopy(t *testing.T) {
	var c NodeClaim
	fillAll(t, reflect.ValueOf(&c).Elem(), "NodeClaim")
	if z := zeroFields(reflect.ValueOf(c), "NodeClaim"); len(z) > 0 {
		t.Fatalf("fillAll left fields zero: %v", z)
	}
	got := c.DeepCopy()
	if !reflect.DeepEqual(&c, got) {
		t.Errorf("DeepCopy() = %+v, want %+v", got, c)
	}
	skip := map[reflect.Type]bool{reflect.TypeFor[Requirements](): true}
	if s := shared(reflect.ValueOf(c), reflect.ValueOf(*got), "NodeClaim", skip); len(s) > 0 {
		t.Errorf("DeepCopy() shares memory with the original at %v", s)
	}

	// Writing through the copy leaves the original alone.
	got.Labels["x"] = "changed"
	got.Taints[0].TimeAdded.Time = time.Time{}
	got.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("9")
	if c.Labels["x"] != "x" || c.Taints[0].TimeAdded.IsZero() || len(c.Status.Allocatable) != 1 {
		t.Errorf("writing through the copy changed the original: %+v", c)
	}

	if (*NodeClaim)(nil).DeepCopy() != nil {
		t.Errorf("(*NodeClaim)(nil).DeepCopy() != nil")
	}
}
