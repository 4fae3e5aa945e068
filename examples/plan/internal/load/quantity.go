package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// resourceListKeys are the fields that hold a map of resource name to quantity in the objects
// this tool reads (containers' resources, pod overhead, node capacity and allocatable).
var resourceListKeys = map[string]bool{
	"requests": true, "limits": true, "capacity": true, "allocatable": true, "overhead": true,
}

// quantityKeys are fields that hold a single quantity (emptyDir.sizeLimit).
var quantityKeys = map[string]bool{"sizeLimit": true}

// findBadQuantity returns the first quantity in an object that does not parse, with its path,
// or nil. JSON decoding of resource.Quantity fails without saying which field; this says.
func findBadQuantity(obj []byte) *fieldError {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return walkQuantities(v, "")
}

func walkQuantities(v any, path string) *fieldError {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if resourceListKeys[k] {
				if m, ok := v[k].(map[string]any); ok {
					names := make([]string, 0, len(m))
					for n := range m {
						names = append(names, n)
					}
					slices.Sort(names)
					for _, n := range names {
						if fe := checkQuantity(m[n], p+"."+n); fe != nil {
							return fe
						}
					}
					continue
				}
			}
			if quantityKeys[k] {
				if fe := checkQuantity(v[k], p); fe != nil {
					return fe
				}
				continue
			}
			if fe := walkQuantities(v[k], p); fe != nil {
				return fe
			}
		}
	case []any:
		for i, e := range v {
			if fe := walkQuantities(e, fmt.Sprintf("%s[%d]", path, i)); fe != nil {
				return fe
			}
		}
	}
	return nil
}

func checkQuantity(v any, path string) *fieldError {
	var s string
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		s = v
	case json.Number:
		s = v.String()
	default:
		return &fieldError{path: path, msg: "not a quantity (want a string such as 500m, 2 or 4Gi)"}
	}
	if _, err := resource.ParseQuantity(s); err != nil {
		return &fieldError{path: path, msg: strconv.Quote(s) + " is not a valid quantity (want e.g. 500m, 2 or 4Gi)"}
	}
	return nil
}
