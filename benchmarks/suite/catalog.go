package suite

import (
	_ "embed"
	"fmt"
	"sync"

	"github.com/nodeplan/nodeplan"
)

//go:embed catalog.json
var catalogJSON []byte

var (
	catalogOnce sync.Once
	catalog     []nodeplan.InstanceType
	catalogErr  error
)

// Catalog returns the embedded instance catalog: 164 instance types of 18 families in three
// us-east-1 zones, each with on-demand and spot offerings. Each call returns a fresh copy of
// the slice; the types' maps and lists are shared and must not be modified.
func Catalog() ([]nodeplan.InstanceType, error) {
	catalogOnce.Do(func() {
		catalog, catalogErr = nodeplan.DecodeCatalog(catalogJSON)
		if catalogErr != nil {
			catalogErr = fmt.Errorf("suite: embedded catalog: %w", catalogErr)
		}
	})
	if catalogErr != nil {
		return nil, catalogErr
	}
	return append([]nodeplan.InstanceType(nil), catalog...), nil
}

// Zones are the catalog's zones.
var Zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}
