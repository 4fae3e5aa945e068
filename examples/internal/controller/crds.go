package controller

import (
	awsapis "github.com/aws/karpenter-provider-aws/pkg/apis"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	coreapis "sigs.k8s.io/karpenter/pkg/apis"
)

// The Karpenter objects the controller reads and writes, as a dynamic client addresses them.
var (
	NodeClaimGVR    = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	NodePoolGVR     = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	EC2NodeClassGVR = schema.GroupVersionResource{Group: "karpenter.k8s.aws", Version: "v1", Resource: "ec2nodeclasses"}
)

// ListKinds maps each resource to its list kind, as a fake dynamic client needs them
// (k8s.io/client-go/dynamic/fake.NewSimpleDynamicClientWithCustomListKinds).
func ListKinds() map[schema.GroupVersionResource]string {
	return map[schema.GroupVersionResource]string{
		NodeClaimGVR:      "NodeClaimList",
		NodePoolGVR:       "NodePoolList",
		EC2NodeClassGVR:   "EC2NodeClassList",
		CapacityBufferGVR: "CapacityBufferList",
	}
}

// CRDs returns Karpenter v1.14.1's own CustomResourceDefinitions for EC2NodeClass, NodeClaim,
// NodePool and NodeOverlay, as its AWS provider module embeds them (the AWS flavour of the
// karpenter.sh CRDs, with the karpenter.k8s.aws label rules): same groups, versions, schemas,
// CEL rules and printer columns, so manifests written for Karpenter apply unchanged and a
// cluster that ran Karpenter already has them. Then the autoscaling.x-k8s.io CapacityBuffer
// CRD, as Karpenter v1.14.1 ships it (its karpenter-crd chart; embedded by
// sigs.k8s.io/karpenter/pkg/apis, the AWS module does not embed it). Each call returns fresh
// copies.
func CRDs() []*apiextensionsv1.CustomResourceDefinition {
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(awsapis.CRDs)+1)
	for _, crd := range awsapis.CRDs {
		out = append(out, crd.DeepCopy())
	}
	for _, crd := range coreapis.CRDs {
		if crd.Spec.Group == CapacityBufferGVR.Group {
			out = append(out, crd.DeepCopy())
		}
	}
	return out
}

// CRDYAML returns the same CRDs as YAML documents, for `kubectl apply -f -`.
func CRDYAML() []byte {
	var out []byte
	for i, b := range [][]byte{awsapis.EC2NodeClassCRD, awsapis.NodeClaimCRD, awsapis.NodePoolCRD, awsapis.NodeOverlayCRD, coreapis.CapacityBufferCRD} {
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, b...)
	}
	return out
}
