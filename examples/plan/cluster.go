package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeplan/nodeplan/examples/plan/internal/load"
)

// A live cluster is read by listing it the way `kubectl get … -o json` would and handing each
// list to the same loader the file flags use, so a plan from the cluster and a plan from a
// snapshot of it are the same plan, checked by the same rules. Only get and list are used: the
// tool needs no write access (clusterRole below).

// The inputs a cluster provides, by the name the loader reports them under.
const (
	clusterPods           = "cluster pods"
	clusterNodes          = "cluster nodes"
	clusterNodePools      = "cluster nodepools"
	clusterEC2NodeClasses = "cluster ec2nodeclasses"
	clusterNodeOverlays   = "cluster nodeoverlays"
	clusterNodeClaims     = "cluster nodeclaims"
	clusterDaemonSets     = "cluster daemonsets"
	clusterPDBs           = "cluster poddisruptionbudgets"
)

var (
	nodePoolsResource      = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	ec2NodeClassesResource = schema.GroupVersionResource{Group: "karpenter.k8s.aws", Version: "v1", Resource: "ec2nodeclasses"}
	nodeOverlaysResource   = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1alpha1", Resource: "nodeoverlays"}
	nodeClaimsResource     = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
)

// listPageSize is the page size of every list: large clusters are read in pages so that neither
// the API server nor this tool holds one huge response.
const listPageSize = 500

// clusterFlags select a cluster to read instead of (or beside) files.
type clusterFlags struct {
	kubeconfig string // a kubeconfig file; "" with current set means the default loading rules
	context    string // a context of that kubeconfig; "" means its current context
	current    bool   // read the cluster of the current context
}

func (c *clusterFlags) register(f *flags) {
	f.StringVar(&c.kubeconfig, "kubeconfig", "", "read the cluster of this kubeconfig `FILE` (read-only: get and list); file flags given too replace that kind")
	f.StringVar(&c.context, "context", "", "kubeconfig `CONTEXT` to use (default: the current one)")
	f.BoolVar(&c.current, "current-context", false, "read the cluster of the current kubeconfig context ($KUBECONFIG or ~/.kube/config)")
}

func (c *clusterFlags) enabled() bool { return c.kubeconfig != "" || c.current || c.context != "" }

// clients builds read-only clients for the selected cluster.
func (c *clusterFlags) clients() (kubernetes.Interface, dynamic.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.kubeconfig != "" {
		rules.ExplicitPath = c.kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, nil, "", badInput{fmt.Errorf("kubeconfig: %w", err)}
	}
	// Listing a large cluster is a burst of requests; the defaults (5/s) would make it crawl.
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "nodeplan-plan (read-only)"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, "", err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, "", err
	}
	return kube, dyn, cfg.Host, nil
}

// connectCluster makes the clients; tests replace it with fakes.
var connectCluster = (*clusterFlags).clients

// clusterReader lists a cluster read-only.
type clusterReader struct {
	kube     kubernetes.Interface
	dynamic  dynamic.Interface
	progress io.Writer // one line per kind as it is listed; nil for none
}

// read lists everything plan uses and returns it as JSON List documents, keyed by the names
// above. A Karpenter kind whose CRD is not installed is an empty list, except NodePools, which
// provisioning cannot do without.
func (r clusterReader) read(ctx context.Context) (map[string][]byte, error) {
	out := map[string][]byte{}
	var errs []error
	typed := []struct {
		name string
		gvk  schema.GroupVersionKind
		list func(context.Context, metav1.ListOptions) (runtime.Object, error)
	}{
		{clusterPods, corev1Kind("Pod"), func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return r.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		}},
		{clusterNodes, corev1Kind("Node"), func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return r.kube.CoreV1().Nodes().List(ctx, o)
		}},
		{clusterDaemonSets, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return r.kube.AppsV1().DaemonSets(metav1.NamespaceAll).List(ctx, o)
		}},
		{clusterPDBs, schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return r.kube.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, o)
		}},
	}
	for _, k := range typed {
		items, err := r.listAll(ctx, k.name, k.list, k.gvk)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[k.name] = listDocument(items)
	}
	for _, k := range []struct {
		name     string
		resource schema.GroupVersionResource
		required bool
	}{
		{clusterNodePools, nodePoolsResource, true},
		{clusterEC2NodeClasses, ec2NodeClassesResource, false},
		{clusterNodeOverlays, nodeOverlaysResource, false},
		{clusterNodeClaims, nodeClaimsResource, false},
	} {
		items, err := r.listAll(ctx, k.name, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return r.dynamic.Resource(k.resource).List(ctx, o)
		}, schema.GroupVersionKind{})
		switch {
		case apierrors.IsNotFound(err) && !k.required:
			items = nil
		case apierrors.IsNotFound(err):
			errs = append(errs, badInput{fmt.Errorf("%s: the cluster does not serve %s: are Karpenter's CRDs installed?", k.name, k.resource)})
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		out[k.name] = listDocument(items)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func corev1Kind(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Version: "v1", Kind: kind}
}

// listAll pages through one list. Items of typed lists come back without apiVersion and kind,
// as client-go decodes them; gvk puts them back, as kubectl prints them.
func (r clusterReader) listAll(ctx context.Context, name string, list func(context.Context, metav1.ListOptions) (runtime.Object, error), gvk schema.GroupVersionKind) ([]any, error) {
	var items []any
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		obj, err := list(ctx, opts)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil, err
			}
			return nil, fmt.Errorf("listing %s: %w", strings.TrimPrefix(name, "cluster "), err)
		}
		page, err := meta.ExtractList(obj)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", strings.TrimPrefix(name, "cluster "), err)
		}
		for _, o := range page {
			if !gvk.Empty() {
				o.GetObjectKind().SetGroupVersionKind(gvk)
			}
			items = append(items, o)
		}
		if r.progress != nil && len(page) > 0 {
			fmt.Fprintf(r.progress, "plan: listing %s: %d\n", strings.TrimPrefix(name, "cluster "), len(items))
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil || lm.GetContinue() == "" {
			return items, nil
		}
		opts.Continue = lm.GetContinue()
	}
}

// listDocument is a kind: List document of items, as `kubectl get -o json` prints several kinds.
func listDocument(items []any) []byte {
	if items == nil {
		items = []any{}
	}
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		// Objects decoded from the API server always encode again.
		panic(fmt.Sprintf("plan: encoding listed objects: %v", err))
	}
	return b
}

// readClusterInto lists the cluster and fills the inputs the user did not give as files; it
// returns the reader the loader should use and the cluster's address for the output.
func readClusterInto(ctx context.Context, c *clusterFlags, files *inputFiles, progress io.Writer) (func(string) ([]byte, error), string, error) {
	kube, dyn, host, err := connectCluster(c)
	if err != nil {
		return nil, "", err
	}
	docs, err := clusterReader{kube: kube, dynamic: dyn, progress: progress}.read(ctx)
	if err != nil {
		return nil, "", err
	}
	return useClusterDocs(docs, files), host, nil
}

// useClusterDocs points every input not given as a file at the cluster's list of that kind.
func useClusterDocs(docs map[string][]byte, files *inputFiles) func(string) ([]byte, error) {
	fill := func(file *string, name string) {
		if *file == "" {
			*file = name
		}
	}
	fill(&files.pods, clusterPods)
	fill(&files.nodes, clusterNodes)
	fill(&files.nodePools, clusterNodePools)
	fill(&files.nodeClasses, clusterEC2NodeClasses)
	fill(&files.nodeOverlays, clusterNodeOverlays)
	fill(&files.nodeClaims, clusterNodeClaims)
	fill(&files.daemonSets, clusterDaemonSets)
	fill(&files.pdbs, clusterPDBs)
	return func(name string) ([]byte, error) {
		if b, ok := docs[name]; ok {
			return b, nil
		}
		return readOSFile(name)
	}
}

// required is the file flags a command needs: all of them, or none with a cluster to read.
func required(c clusterFlags, flags ...string) []string {
	if c.enabled() {
		return nil
	}
	return flags
}

// newLoader returns the loader for the command's inputs: the files as given, and, with a
// cluster selected, the cluster's lists for every input not given as a file.
func newLoader(ctx context.Context, c clusterFlags, files *inputFiles, stderr io.Writer) (load.Loader, error) {
	l := load.Loader{Warn: func(msg string) { fmt.Fprintf(stderr, "plan: warning: %s\n", msg) }}
	if !c.enabled() {
		return l, nil
	}
	read, host, err := readClusterInto(ctx, &c, files, stderr)
	if err != nil {
		return l, err
	}
	fmt.Fprintf(stderr, "plan: read the cluster at %s (read-only)\n", host)
	l.ReadFile = read
	return l, nil
}

func readOSFile(name string) ([]byte, error) { return os.ReadFile(name) }

// sourceFlags are the flags every command that plans on a snapshot shares: where the inputs
// come from (a cluster or files), how a catalog is built, and how prices are adjusted.
type sourceFlags struct {
	cluster clusterFlags
	catalog catalogFlags
	prices  priceFlags
}

func (s *sourceFlags) register(f *flags, files *inputFiles) {
	s.cluster.register(f)
	s.catalog.register(f)
	s.prices.register(f, files)
}

// snapshot checks that the file flags a command needs were given (none with a cluster), reads
// the inputs, builds the catalog when none was given, and prices it.
func (s *sourceFlags) snapshot(ctx context.Context, f *flags, files *inputFiles, stderr io.Writer, requiredFiles ...string) (*snapshot, error) {
	if err := f.require(required(s.cluster, requiredFiles...)...); err != nil {
		return nil, err
	}
	loader, err := newLoader(ctx, s.cluster, files, stderr)
	if err != nil {
		return nil, err
	}
	snap, err := loadSnapshot(*files, loader)
	if err != nil {
		return nil, err
	}
	if err := ensureCatalog(ctx, snap, s.catalog); err != nil {
		return nil, err
	}
	if err := applyPrices(snap, s.prices); err != nil {
		return nil, err
	}
	return snap, nil
}
