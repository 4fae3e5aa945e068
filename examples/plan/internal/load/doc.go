// Package load reads the what-if tool's input files: Kubernetes objects as kubectl prints them
// (a List, a typed list such as PodList, one object, or multi-document YAML; YAML or JSON),
// Karpenter v1 NodePools and instance catalogs.
//
// Every problem is an [*Error] naming the file and the object — "file pods.yaml: document 3
// (line 41): kind Deployment, want Pod" — so a person can find and fix it. Objects are checked
// beyond what JSON decoding checks: quantities, selector and toleration operators, names. Input
// that is merely ignored (an unknown field, say) is reported to [Loader.Warn] instead.
//
// It does not talk to a cluster and does not resolve references between objects; the caller
// decides which pods are bound, which nodes belong to which NodePool, and so on.
//
// # Usage
//
//	var l load.Loader
//	pods, err := l.Pods("pods.yaml")
//	if err != nil {
//		// err names the file and object; every problem in the file is reported
//	}
package load
