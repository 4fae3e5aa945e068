package controller

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/nodeplan/nodeplan/cloudprovider"
)

// classLister is a NodePoolSource that can list the EC2NodeClasses it read ([ClusterNodePools]).
type classLister interface {
	ClassNames() []string
}

// ClassNames returns the names of the EC2NodeClass objects, valid or not, sorted.
func (s *ClusterNodePools) ClassNames() []string {
	if s.classInf == nil {
		return nil
	}
	var out []string
	for _, u := range listed(s.classInf) {
		out = append(out, u.GetName())
	}
	return out
}

// currentImages returns the image IDs the node class selects now, when the provider can say.
func (c *Controller) currentImages(ctx context.Context, class string) []string {
	r, ok := c.Provider.(cloudprovider.NodeClassResolver)
	if !ok || class == "" {
		return nil
	}
	res, err := r.ResolveNodeClass(ctx, class)
	if err != nil {
		return nil
	}
	var out []string
	for _, img := range res.Images {
		out = append(out, img.ID)
	}
	return out
}

// classStatus renders a resolution as EC2NodeClass status fields, as Karpenter's AWS provider
// names them: subnets (id, zone, zoneID), securityGroups (id, name), amis (id, name,
// requirements), instanceProfile.
func classStatus(res *cloudprovider.NodeClassResolution) map[string]any {
	subnets := []any{}
	for _, s := range res.Subnets {
		m := map[string]any{"id": s.ID, "zone": s.Zone}
		if s.ZoneID != "" {
			m["zoneID"] = s.ZoneID
		}
		subnets = append(subnets, m)
	}
	groups := []any{}
	for _, g := range res.SecurityGroups {
		m := map[string]any{"id": g.ID}
		if g.Name != "" {
			m["name"] = g.Name
		}
		groups = append(groups, m)
	}
	amis := []any{}
	for _, img := range res.Images {
		reqs := []any{}
		for _, r := range img.Requirements {
			vals := []any{}
			for _, v := range r.Values {
				vals = append(vals, v)
			}
			reqs = append(reqs, map[string]any{"key": r.Key, "operator": string(r.Operator), "values": vals})
		}
		m := map[string]any{"id": img.ID, "requirements": reqs}
		if img.Name != "" {
			m["name"] = img.Name
		}
		amis = append(amis, m)
	}
	out := map[string]any{"subnets": subnets, "securityGroups": groups, "amis": amis}
	if res.InstanceProfile != "" {
		out["instanceProfile"] = res.InstanceProfile
	}
	return out
}

// updateClassStatus writes each EC2NodeClass's resolved subnets, security groups, images and
// instance profile onto its status, where they changed, when the provider can resolve classes
// and the pools come from the cluster. A class that does not resolve keeps its last status
// (its pools cannot launch; the launch error says why).
func (c *Controller) updateClassStatus(ctx context.Context) {
	r, ok := c.Provider.(cloudprovider.NodeClassResolver)
	src, ok2 := c.NodePools.(classLister)
	if !ok || !ok2 || !c.claimBusy("classstatus") {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.release("classstatus")
		c.writeClassStatus(ctx, r, src.ClassNames())
	}()
}

func (c *Controller) writeClassStatus(ctx context.Context, r cloudprovider.NodeClassResolver, names []string) {
	for _, name := range names {
		res, err := r.ResolveNodeClass(ctx, name)
		if err != nil {
			if ctx.Err() == nil {
				c.log().Debug("could not resolve ec2nodeclass", "ec2nodeclass", name, "err", err)
			}
			continue
		}
		want := classStatus(res)
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			u, err := c.Dynamic.Resource(EC2NodeClassGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			status, _, _ := unstructured.NestedMap(u.Object, "status")
			if status == nil {
				status = map[string]any{}
			}
			changed := false
			for _, k := range []string{"subnets", "securityGroups", "amis", "instanceProfile"} {
				w, has := want[k]
				if !has {
					continue
				}
				if !reflect.DeepEqual(status[k], w) {
					status[k] = w
					changed = true
				}
			}
			if !changed {
				return nil
			}
			u.Object["status"] = status
			_, err = c.Dynamic.Resource(EC2NodeClassGVR).UpdateStatus(ctx, u, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			c.log().Error("could not update ec2nodeclass status", "ec2nodeclass", name, "err", err)
		}
	}
}
