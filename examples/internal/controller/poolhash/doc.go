// Package poolhash computes the NodePool template hash Karpenter v1.14 writes as the
// annotation karpenter.sh/nodepool-hash (version v3) on a NodePool and on every NodeClaim it
// launches, so that a NodePool edited after a launch shows as drift (NodePoolDrifted) — and so
// that the hashes on NodeClaims Karpenter launched stay comparable after nodeplan takes over.
//
// # What is hashed
//
// Karpenter hashes its typed spec.template with github.com/mitchellh/hashstructure/v2
// (FormatV2, slices as sets, zero values ignored, nil equal to zero). That folds Go type and
// field names into the hash, so this package decodes the template into types named as
// Karpenter's are (NodeClaimTemplate, ObjectMeta, NodeClaimTemplateSpec, NodeClassReference,
// NillableDuration) carrying only the hashed fields:
//
//   - metadata.labels and metadata.annotations;
//   - spec.taints and spec.startupTaints (order does not matter);
//   - spec.nodeClassRef (group, kind, name);
//   - spec.terminationGracePeriod and spec.expireAfter ("Never" hashes as unset).
//
// Not hashed: spec.requirements (Karpenter checks them separately, against the NodeClaim's
// labels: RequirementsDrifted), and everything outside the template — disruption and its
// budgets, limits, weight, replicas. The NodeClaim's resources are never part of it.
//
// It does not compare hashes or decide drift: the controller does (drift.go).
//
// The test compares [Template] with hashes Karpenter's own NodePool.Hash() printed for the
// NodePools in testdata (testdata/karphash holds the generator, a separate module).
//
// # Usage
//
//	h, err := poolhash.Template(nodePoolObject.Object) // the unstructured NodePool
//	annotations[poolhash.AnnotationHash] = h
//	annotations[poolhash.AnnotationVersion] = poolhash.Version
package poolhash
