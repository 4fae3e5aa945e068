package controller_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// bare implements only cloudprovider.Provider, failing every call.
type bare struct{}

var errBare = errors.New("bare")

func (bare) Create(context.Context, *nodeplan.NodeClaim) (*nodeplan.NodeClaim, error) {
	return nil, &cloudprovider.InsufficientCapacityError{}
}
func (bare) Delete(context.Context, string) error                     { return &cloudprovider.NotFoundError{} }
func (bare) Get(context.Context, string) (*nodeplan.NodeClaim, error) { return nil, errBare }
func (bare) List(context.Context) ([]*nodeplan.NodeClaim, error)      { return nil, errBare }
func (bare) InstanceTypes(context.Context, *nodeplan.NodePool) ([]nodeplan.InstanceType, error) {
	return nil, errBare
}
func (bare) IsDrifted(context.Context, *nodeplan.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", errBare
}

// The instrumented provider keeps exactly the optional interfaces of the one it wraps, and
// counts errors by Karpenter's kinds.
func TestInstrumentProvider(t *testing.T) {
	m := controller.NewMetrics()
	mem := m.InstrumentProvider(&cloudprovider.Memory{})
	if _, ok := mem.(cloudprovider.InterruptionSource); !ok {
		t.Error("Memory instrumented is no InterruptionSource")
	}
	if _, ok := mem.(cloudprovider.Repairer); !ok {
		t.Error("Memory instrumented is no Repairer")
	}
	if _, ok := mem.(cloudprovider.NodeClassResolver); !ok {
		t.Error("Memory instrumented is no NodeClassResolver")
	}
	if m.InstrumentProvider(mem) != mem {
		t.Error("instrumenting twice wraps twice")
	}
	b := m.InstrumentProvider(bare{})
	if _, ok := b.(cloudprovider.InterruptionSource); ok {
		t.Error("a provider without interruptions gained them")
	}
	if _, ok := b.(cloudprovider.NodeClassResolver); ok {
		t.Error("a provider without ResolveNodeClass gained it")
	}
	ctx := context.Background()
	_, _ = b.Create(ctx, &nodeplan.NodeClaim{})
	_ = b.Delete(ctx, "x")
	_, _ = b.List(ctx)
	for _, c := range []struct {
		method, kind string
	}{{"Create", "InsufficientCapacityError"}, {"Delete", "NodeClaimNotFoundError"}, {"List", ""}} {
		v, ok := m.Value("karpenter_cloudprovider_errors_total", map[string]string{"controller": "nodeplan", "method": c.method, "provider": "aws", "error": c.kind})
		if !ok || v != 1 {
			t.Errorf("errors_total{method=%s,error=%q} = %v (%v), want 1", c.method, c.kind, v, ok)
		}
	}
}
