package load

import (
	"errors"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
)

// NodePools reads Karpenter v1 NodePools (see [nodeplan.DecodeNodePools]).
func (l *Loader) NodePools(file string) ([]nodeplan.NodePool, error) {
	data, err := l.readFile(file)
	if err != nil {
		return nil, err
	}
	pools, err := nodeplan.DecodeNodePools(data)
	if err != nil {
		return nil, eachInFile(file, err)
	}
	if len(pools) == 0 {
		return nil, &Error{File: file, Err: errors.New("no NodePools; want karpenter.sh/v1 NodePool objects")}
	}
	return pools, nil
}

// EC2NodeClasses reads Karpenter v1 EC2NodeClasses (see [ec2.DecodeNodeClasses]); other
// kinds in the same stream are left to their own readers.
func (l *Loader) EC2NodeClasses(file string) ([]ec2.NodeClass, error) {
	data, err := l.readFile(file)
	if err != nil {
		return nil, err
	}
	classes, err := ec2.DecodeNodeClasses(data)
	if err != nil {
		return nil, eachInFile(file, err)
	}
	return classes, nil
}

// NodeClaims reads Karpenter v1 NodeClaims (see [nodeplan.DecodeNodeClaims]); other kinds in
// the same stream are left to their own readers.
func (l *Loader) NodeClaims(file string) ([]nodeplan.NodeClaim, error) {
	data, err := l.readFile(file)
	if err != nil {
		return nil, err
	}
	claims, err := nodeplan.DecodeNodeClaims(data)
	if err != nil {
		return nil, eachInFile(file, err)
	}
	return claims, nil
}

// NodeOverlays reads Karpenter NodeOverlays (see [nodeplan.DecodeNodeOverlays]); other kinds in
// the same stream are left to their own readers.
func (l *Loader) NodeOverlays(file string) ([]nodeplan.NodeOverlay, error) {
	data, err := l.readFile(file)
	if err != nil {
		return nil, err
	}
	overlays, err := nodeplan.DecodeNodeOverlays(data)
	if err != nil {
		return nil, eachInFile(file, err)
	}
	return overlays, nil
}
