package cloudprovider

import (
	"context"
)

// ResolveNodeClass implements [NodeClassResolver]: every class resolves to the image new nodes
// boot (ImageID, for every architecture). The in-memory cloud has no subnets, security groups
// or instance profiles, so those are empty.
func (m *Memory) ResolveNodeClass(ctx context.Context, name string) (*NodeClassResolution, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return &NodeClassResolution{Images: []ResolvedImage{{ID: m.imageID()}}}, nil
}
