package controller

import (
	"context"
	"errors"
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
//
// A source that cannot say which pools exist — its object is missing, it has not been read
// yet, or it holds no pool at all — returns an error, never an empty list: the controller
// then neither provisions nor disrupts, and judges no node by its pool, rather than taking
// every node for one of a deleted pool.
type NodePoolSource interface {
	NodePools() ([]nodeplan.NodePool, error)
}

// ErrNoNodePools is returned by sources that hold no NodePool.
var ErrNoNodePools = errors.New("controller: no NodePools")

// StaticNodePools is a fixed list, e.g. decoded from a file at startup.
type StaticNodePools []nodeplan.NodePool

// NodePools implements [NodePoolSource]; an empty list is [ErrNoNodePools].
func (s StaticNodePools) NodePools() ([]nodeplan.NodePool, error) {
	if len(s) == 0 {
		return nil, ErrNoNodePools
	}
	return s, nil
}

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
	err   error
}

// NodePools implements [NodePoolSource]: an error until the ConfigMap has been read, while it
// is missing, and when it holds no pool.
func (s *ConfigMapNodePools) NodePools() ([]nodeplan.NodePool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	if s.pools == nil {
		return nil, fmt.Errorf("controller: ConfigMap %s/%s not read yet", s.Namespace, s.Name)
	}
	if len(s.pools) == 0 {
		return nil, fmt.Errorf("controller: ConfigMap %s/%s key %s: %w", s.Namespace, s.Name, s.key(), ErrNoNodePools)
	}
	return s.pools, nil
}

func (s *ConfigMapNodePools) key() string {
	if s.Key == "" {
		return "nodepools.yaml"
	}
	return s.Key
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
		key := s.key()
		data, ok := cm.Data[key]
		if !ok {
			s.mu.Lock()
			s.err = fmt.Errorf("controller: ConfigMap %s/%s has no key %s", s.Namespace, s.Name, key)
			s.mu.Unlock()
			return
		}
		pools, err := s.Decode([]byte(data))
		log := s.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		if err != nil {
			log.Error("could not decode nodepools; keeping the previous ones", "configmap", s.Namespace+"/"+s.Name, "err", err)
			return
		}
		s.mu.Lock()
		s.pools, s.err = pools, nil
		if s.pools == nil {
			s.pools = []nodeplan.NodePool{}
		}
		s.mu.Unlock()
		log.Info("loaded nodepools", "configmap", s.Namespace+"/"+s.Name, "nodepools", len(pools))
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(any) {
			s.mu.Lock()
			s.err = fmt.Errorf("controller: ConfigMap %s/%s was deleted", s.Namespace, s.Name)
			s.mu.Unlock()
		},
	}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	s.mu.Lock()
	if s.pools == nil && s.err == nil {
		s.err = fmt.Errorf("controller: ConfigMap %s/%s not found", s.Namespace, s.Name)
	}
	s.mu.Unlock()
	return nil
}
