package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/examples/internal/controller/poolhash"
)

// ClusterNodePools is the [NodePoolSource] of a cluster that runs on Karpenter's objects: the
// karpenter.sh/v1 NodePools and karpenter.k8s.aws/v1 EC2NodeClasses, watched, so an edit takes
// effect on the next pass. Each object is read as unstructured data and decoded on its own by
// nodeplan.DecodeManifests — the decoder the file and ConfigMap sources use — so one decoder's
// rules apply, and an invalid object does not stop the others:
//
//   - an EC2NodeClass that does not decode gets ValidationSucceeded=False and Ready=False, with
//     the decoder's message (field path included), and a Warning event; its pools cannot
//     launch;
//   - a NodePool that does not decode gets ValidationSucceeded=False (reason
//     NodePoolValidationFailed); one whose class is missing or invalid gets NodeClassReady=False
//     (NodeClassNotFound, or the class's own reason and message); either way Ready=False, a
//     Warning event, and the pool is left out while the others keep working.
//
// The source is an error (see [NodePoolSource]) until both informers have synced, and when no
// valid NodePool is left.
type ClusterNodePools struct {
	Dynamic dynamic.Interface
	// Recorder records the validation events; nil records none.
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// Now stamps condition transitions; nil means time.Now.
	Now func() time.Time
	// OnClasses, when set, receives the valid EC2NodeClasses by name after every change (the
	// EC2 provider looks them up by name).
	OnClasses func(map[string]*ec2.NodeClass)

	mu     sync.Mutex
	pools  []nodeplan.NodePool
	uids   map[string]string
	hashes map[string]string // pool → template hash (poolhash)
	// seen remembers each template by hash, so a drift message can name what changed.
	seen     map[string]poolhash.NodeClaimTemplate
	err      error
	synced   bool
	pending  chan struct{}
	poolInf  cache.SharedIndexInformer
	classInf cache.SharedIndexInformer
}

// NodePools implements [NodePoolSource].
func (s *ClusterNodePools) NodePools() ([]nodeplan.NodePool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.synced {
		return nil, errors.New("controller: NodePools and EC2NodeClasses not read yet")
	}
	if s.err != nil {
		return nil, s.err
	}
	return s.pools, nil
}

// Known returns the names of the NodePool objects in the cluster that are not being deleted,
// valid or not, and false before the first read. The controller judges "the claim's pool is
// gone" by these: an invalid edit leaves a pool out of [ClusterNodePools.NodePools] (nothing is
// launched for it) but must not drain its nodes.
func (s *ClusterNodePools) Known() ([]string, bool) {
	s.mu.Lock()
	synced := s.synced
	s.mu.Unlock()
	if !synced || s.poolInf == nil {
		return nil, false
	}
	out := []string{}
	for _, u := range listed(s.poolInf) {
		if u.GetDeletionTimestamp() == nil {
			out = append(out, u.GetName())
		}
	}
	return out, true
}

// TemplateHash returns the pool's template hash as Karpenter v1.14 computes it (annotation
// karpenter.sh/nodepool-hash, version v3), or "" for an unknown pool.
func (s *ClusterNodePools) TemplateHash(pool string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hashes[pool]
}

// TemplateByHash returns a template this source has seen with the hash, if any.
func (s *ClusterNodePools) TemplateByHash(hash string) (poolhash.NodeClaimTemplate, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.seen[hash]
	return t, ok
}

// UID returns the UID of the NodePool object, for the owner reference on its NodeClaims.
func (s *ClusterNodePools) UID(pool string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uids[pool]
}

func (s *ClusterNodePools) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (s *ClusterNodePools) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Start watches the objects until ctx is done; it returns once both caches have synced and
// the first read is done.
func (s *ClusterNodePools) Start(ctx context.Context) error {
	if s.Dynamic == nil {
		return errors.New("controller: ClusterNodePools has no Dynamic client")
	}
	f := dynamicinformer.NewDynamicSharedInformerFactory(s.Dynamic, 0)
	s.poolInf = f.ForResource(NodePoolGVR).Informer()
	s.classInf = f.ForResource(EC2NodeClassGVR).Informer()
	s.pending = make(chan struct{}, 1)
	kick := func() {
		select {
		case s.pending <- struct{}{}:
		default:
		}
	}
	h := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { kick() }, UpdateFunc: func(_, _ any) { kick() }, DeleteFunc: func(any) { kick() }}
	for _, inf := range []cache.SharedIndexInformer{s.poolInf, s.classInf} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	f.Start(ctx.Done())
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("controller: %s informer did not sync (are Karpenter's CRDs installed?)", gvr.Resource)
		}
	}
	s.refresh(ctx)
	go func() {
		defer f.Shutdown()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.pending:
				s.refresh(ctx)
			}
		}
	}()
	return nil
}

func listed(inf cache.SharedIndexInformer) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range inf.GetStore().List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// decodeObject decodes one object with nodeplan's manifest decoder.
func decodeObject(u *unstructured.Unstructured) (nodeplan.Manifests, error) {
	b, err := json.Marshal(u.Object)
	if err != nil {
		return nodeplan.Manifests{}, err
	}
	return nodeplan.DecodeManifests(b)
}

// refresh decodes every object, publishes the valid pools and classes, and writes the
// conditions that changed.
func (s *ClusterNodePools) refresh(ctx context.Context) {
	classes := map[string]*ec2.NodeClass{}
	classErr := map[string]error{}
	for _, u := range listed(s.classInf) {
		m, err := decodeObject(u)
		decoded := ec2.NodeClasses(m)
		if err == nil && len(decoded) != 1 {
			err = errors.New("not one EC2NodeClass")
		}
		ok := err == nil
		if ok {
			classes[u.GetName()] = &decoded[0]
		} else {
			classErr[u.GetName()] = err
		}
		if u.GetDeletionTimestamp() != nil {
			classErr[u.GetName()] = errNodeClassTerminating
			delete(classes, u.GetName())
		}
		s.setConditions(ctx, EC2NodeClassGVR, u, validationConditions(err, "EC2NodeClassValidationFailed"))
	}
	var pools []nodeplan.NodePool
	uids := map[string]string{}
	hashes := map[string]string{}
	seen := map[string]poolhash.NodeClaimTemplate{}
	var problems []string
	for _, u := range listed(s.poolInf) {
		m, err := decodeObject(u)
		if err == nil && len(m.NodePools) != 1 {
			err = errors.New("not one NodePool")
		}
		conds := validationConditions(err, "NodePoolValidationFailed")
		conds = conds[:1] // ValidationSucceeded; Ready follows from both below
		var classCond metav1.Condition
		if err == nil {
			ref := m.NodePools[0].Template.NodeClassRef
			switch cerr, found := classErr[ref.Name]; {
			case ref.Kind != "" && ref.Kind != ec2.KindNodeClass:
				classCond = metav1.Condition{Type: "NodeClassReady", Status: metav1.ConditionFalse, Reason: "NodeClassNotFound",
					Message: fmt.Sprintf("nodeClassRef kind %q is not served here (want %s)", ref.Kind, ec2.KindNodeClass)}
			case found && errors.Is(cerr, errNodeClassTerminating):
				classCond = metav1.Condition{Type: "NodeClassReady", Status: metav1.ConditionFalse, Reason: "NodeClassTerminating", Message: "NodeClass is Terminating"}
			case found:
				classCond = metav1.Condition{Type: "NodeClassReady", Status: metav1.ConditionFalse, Reason: "EC2NodeClassValidationFailed", Message: cerr.Error()}
			case classes[ref.Name] == nil:
				classCond = metav1.Condition{Type: "NodeClassReady", Status: metav1.ConditionFalse, Reason: "NodeClassNotFound", Message: "NodeClass not found on cluster"}
			default:
				classCond = metav1.Condition{Type: "NodeClassReady", Status: metav1.ConditionTrue, Reason: "NodeClassReady"}
			}
		} else {
			classCond = metav1.Condition{Type: "NodeClassReady", Status: metav1.ConditionUnknown, Reason: "AwaitingReconciliation",
				Message: "object is awaiting reconciliation"}
		}
		ready := readyCondition(conds[0], classCond)
		conds = append(conds, classCond, ready)
		s.setConditions(ctx, NodePoolGVR, u, conds)
		if err != nil || classCond.Status != metav1.ConditionTrue || u.GetDeletionTimestamp() != nil {
			msg := classCond.Message
			if err != nil {
				msg = err.Error()
			}
			problems = append(problems, fmt.Sprintf("NodePool %s: %s", u.GetName(), msg))
			continue
		}
		// The decoded status is the one this pass replaces: the pool is as ready as worked out now.
		m.NodePools[0].Ready = nodeplan.Condition{Status: ready.Status, Reason: ready.Reason, Message: ready.Message}
		pools = append(pools, m.NodePools[0])
		uids[u.GetName()] = string(u.GetUID())
		if h, t, err := templateHash(u); err == nil {
			hashes[u.GetName()] = h
			seen[h] = t
			s.stampHash(ctx, u, h)
		}
	}
	s.mu.Lock()
	s.synced = true
	s.pools, s.uids, s.err = pools, uids, nil
	s.hashes = hashes
	if s.seen == nil {
		s.seen = map[string]poolhash.NodeClaimTemplate{}
	}
	maps.Copy(s.seen, seen)
	if len(pools) == 0 {
		s.err = ErrNoNodePools
		if len(problems) > 0 {
			s.err = fmt.Errorf("%w ready: %s", ErrNoNodePools, strings.Join(problems, "; "))
		}
	}
	s.mu.Unlock()
	if s.OnClasses != nil {
		s.OnClasses(classes)
	}
}

// templateHash hashes the NodePool object's spec.template as Karpenter does.
func templateHash(u *unstructured.Unstructured) (string, poolhash.NodeClaimTemplate, error) {
	t, err := poolhash.Decode(u.Object)
	if err != nil {
		return "", t, err
	}
	h, err := poolhash.Hash(t)
	return h, t, err
}

// stampHash writes the template hash and its version onto the NodePool object, as
// Karpenter's nodepool.hash controller does, when they differ.
func (s *ClusterNodePools) stampHash(ctx context.Context, u *unstructured.Unstructured, hash string) {
	ann := u.GetAnnotations()
	if ann[poolhash.AnnotationHash] == hash && ann[poolhash.AnnotationVersion] == poolhash.Version {
		return
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := s.Dynamic.Resource(NodePoolGVR).Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		a := cur.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[poolhash.AnnotationHash] = hash
		a[poolhash.AnnotationVersion] = poolhash.Version
		cur.SetAnnotations(a)
		_, err = s.Dynamic.Resource(NodePoolGVR).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil {
		s.log().Error("could not annotate nodepool with its template hash", "nodepool", u.GetName(), "err", err)
	}
}

var errNodeClassTerminating = errors.New("NodeClass is Terminating")

// validationConditions returns ValidationSucceeded and Ready for a decode result.
func validationConditions(err error, failReason string) []metav1.Condition {
	v := metav1.Condition{Type: "ValidationSucceeded", Status: metav1.ConditionTrue, Reason: "ValidationSucceeded"}
	if err != nil {
		v = metav1.Condition{Type: "ValidationSucceeded", Status: metav1.ConditionFalse, Reason: failReason, Message: err.Error()}
	}
	return []metav1.Condition{v, readyCondition(v)}
}

// readyCondition is the root condition over its dependents: True when all are, False when one
// is False, Unknown otherwise; the message names the ones not True.
func readyCondition(deps ...metav1.Condition) metav1.Condition {
	var bad []string
	status := metav1.ConditionTrue
	for _, d := range deps {
		if d.Status != metav1.ConditionTrue {
			bad = append(bad, fmt.Sprintf("%s=%s", d.Type, d.Status))
			if d.Status == metav1.ConditionFalse {
				status = metav1.ConditionFalse
			} else if status == metav1.ConditionTrue {
				status = metav1.ConditionUnknown
			}
		}
	}
	switch status {
	case metav1.ConditionTrue:
		return metav1.Condition{Type: "Ready", Status: status, Reason: "Ready"}
	case metav1.ConditionFalse:
		return metav1.Condition{Type: "Ready", Status: status, Reason: "UnhealthyDependents", Message: strings.Join(bad, ", ")}
	}
	return metav1.Condition{Type: "Ready", Status: status, Reason: "ReconcilingDependents", Message: strings.Join(bad, ", ")}
}

// setConditions writes the conditions that changed onto the object's status, and records a
// Warning event and a log line when one turns False.
func (s *ClusterNodePools) setConditions(ctx context.Context, gvr schema.GroupVersionResource, u *unstructured.Unstructured, want []metav1.Condition) {
	var st struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if raw, ok := u.Object["status"].(map[string]any); ok {
		if b, err := json.Marshal(raw); err == nil {
			_ = json.Unmarshal(b, &st)
		}
	}
	changed := false
	now := metav1.NewTime(s.now())
	for _, c := range want {
		c.LastTransitionTime = now
		c.ObservedGeneration = u.GetGeneration()
		old := meta.FindStatusCondition(st.Conditions, c.Type)
		if old != nil && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == c.ObservedGeneration {
			continue
		}
		if c.Status == metav1.ConditionFalse && c.Type != "Ready" && (old == nil || old.Message != c.Message) {
			kind := u.GetKind()
			s.log().Error("invalid object; leaving it out", "kind", kind, "name", u.GetName(), "condition", c.Type,
				"reason", c.Reason, "message", c.Message)
			if s.Recorder != nil {
				s.Recorder.Eventf(u, corev1.EventTypeWarning, c.Reason, "%s", c.Message)
			}
		}
		meta.SetStatusCondition(&st.Conditions, c)
		changed = true
	}
	if !changed {
		return
	}
	slices.SortStableFunc(st.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	conds, err := toMap(st)
	if err != nil {
		return
	}
	status, _ := u.Object["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
	}
	status["conditions"] = conds["conditions"]
	u.Object["status"] = status
	if _, err := s.Dynamic.Resource(gvr).UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
		s.log().Error("could not update status", "kind", u.GetKind(), "name", u.GetName(), "err", err)
	}
}
