package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeplan/nodeplan"
)

// NodePoolSource gives the current NodePools. Safe for concurrent use. A source that also has
// a Start(ctx) error method is started by the controller before its first pass.
type NodePoolSource interface {
	NodePools() []nodeplan.NodePool
}

// StaticNodePools is a fixed list, e.g. decoded from a file at startup.
type StaticNodePools []nodeplan.NodePool

// NodePools implements [NodePoolSource].
func (s StaticNodePools) NodePools() []nodeplan.NodePool { return s }

// ConfigMapNodePools reads NodePools (Karpenter v1 YAML) from one key of a ConfigMap and
// follows its changes. A change that does not decode is logged and ignored: the last good
// pools stay.
type ConfigMapNodePools struct {
	Client          kubernetes.Interface
	Namespace, Name string
	// Key holds the YAML; empty means "nodepools.yaml".
	Key string
	// Decode turns the YAML into pools (nodeplan's manifest decoder). Required.
	Decode func([]byte) ([]nodeplan.NodePool, error)
	Logger *slog.Logger

	mu    sync.Mutex
	pools []nodeplan.NodePool
}

// NodePools implements [NodePoolSource].
func (s *ConfigMapNodePools) NodePools() []nodeplan.NodePool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pools
}

// Start watches the ConfigMap until ctx is done and returns once it has been read (or found
// missing).
func (s *ConfigMapNodePools) Start(ctx context.Context) error {
	if s.Decode == nil {
		return fmt.Errorf("controller: ConfigMapNodePools %s/%s has no Decode", s.Namespace, s.Name)
	}
	f := informers.NewSharedInformerFactoryWithOptions(s.Client, 0, informers.WithNamespace(s.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", s.Name).String()
		}))
	inf := f.Core().V1().ConfigMaps().Informer()
	set := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		key := s.Key
		if key == "" {
			key = "nodepools.yaml"
		}
		pools, err := s.Decode([]byte(cm.Data[key]))
		log := s.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		if err != nil {
			log.Error("could not decode nodepools; keeping the previous ones", "configmap", s.Namespace+"/"+s.Name, "err", err)
			return
		}
		s.mu.Lock()
		s.pools = pools
		s.mu.Unlock()
		log.Info("loaded nodepools", "configmap", s.Namespace+"/"+s.Name, "nodepools", len(pools))
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return nil
}
