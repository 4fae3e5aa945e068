package controller

import (
	"context"
	"log/slog"
	"strings"
)

// Karpenter's log lines carry the name of the controller that wrote them under the key
// "controller" (controller-runtime's reconcile context: provisioner, disruption,
// nodeclaim.lifecycle, node.termination, interruption, …), and operators filter on it
// (`jq 'select(.controller == "nodeclaim.lifecycle")'`). controllerOf names, for each of this
// controller's messages, the Karpenter controller whose work it is.
var controllerOfMessage = map[string]string{
	"found provisionable pod(s)":                                           "provisioner",
	"computed new nodeclaim(s) to fit pod(s)":                              "provisioner",
	"created nodeclaim":                                                    "provisioner",
	"could not schedule pod":                                               "provisioner",
	"could not solve":                                                      "provisioner",
	"could not get instance types":                                         "provisioner",
	"could not apply the cost model":                                       "provisioner",
	"nodeoverlay conflict":                                                 "provisioner",
	"could not price the node class's volumes":                             "provisioner",
	"could not create nodeclaim; not launching":                            "provisioner",
	"launched nodeclaim":                                                   "nodeclaim.lifecycle",
	"registered nodeclaim":                                                 "nodeclaim.lifecycle",
	"initialized nodeclaim":                                                "nodeclaim.lifecycle",
	"deleted nodeclaim":                                                    "nodeclaim.lifecycle",
	"could not launch nodeclaim":                                           "nodeclaim.lifecycle",
	"could not sync nodeclaim onto node":                                   "nodeclaim.lifecycle",
	"could not label node initialized":                                     "nodeclaim.lifecycle",
	"nodeclaim launch timed out":                                           "nodeclaim.lifecycle",
	"could not delete instance":                                            "nodeclaim.lifecycle",
	"nodeclaim did not register in time; deleting its instance":            "nodeclaim.lifecycle",
	"launch returned after the claim was abandoned; deleting the instance": "nodeclaim.lifecycle",
	"tainted node":                                                         "node.termination",
	"deleted node":                                                         "node.termination",
	"evicted pod":                                                          "node.termination",
	"could not evict pod":                                                  "node.termination",
	"could not delete pod":                                                 "node.termination",
	"could not taint node; retrying":                                       "node.termination",
	"could not delete node; retrying":                                      "node.termination",
	"could not delete node":                                                "node.termination",
	"could not read pod before evicting it":                                "node.termination",
	"eviction refused by a PodDisruptionBudget; will retry":                "node.termination",
	"deleted pod: the node's terminationGracePeriod is running out":        "node.termination",
	"terminationGracePeriod elapsed; terminating the node":                 "node.termination",
	"not evicting pod: do-not-disrupt; it waits for the node's terminationGracePeriod": "node.termination",
	"node was deleted; deleting its instance":                                          "node.termination",
	"deleting node registered for an instance already deleted":                         "node.termination",
	"disrupting node(s)":                                                     "disruption",
	"node not disrupted":                                                     "disruption",
	"could not plan disruption":                                              "disruption",
	"not disrupting: nodepools unavailable":                                  "disruption",
	"disruption command cancelled":                                           "disruption",
	"skipping command: node already being disrupted":                         "disruption",
	"abandoning disruption command: a replacement failed":                    "disruption",
	"abandoning disruption command: replacements did not initialize in time": "disruption",
	"received spot interruption warning":                                     "interruption",
	"received interruption":                                                  "interruption",
	"received rebalance recommendation":                                      "interruption",
	"interruption for an instance no nodeclaim owns":                         "interruption",
	"could not read interruptions":                                           "interruption",
	"instance is gone; deleting nodeclaim":                                   "nodeclaim.garbagecollection",
	"instance has no nodeclaim; leaving it alone":                            "nodeclaim.garbagecollection",
	"failed launch left no instance; deleting nodeclaim":                     "nodeclaim.garbagecollection",
	"could not list instances":                                               "nodeclaim.garbagecollection",
	"instance is gone but its node is still Ready; deleting the nodeclaim and leaving the node": "nodeclaim.garbagecollection",
}

// controllerOf is the "controller" of a line with message msg: its entry in
// controllerOfMessage; lines about drift are nodeclaim.disruption's, about static pools
// static.provisioning's; any other line is the controller's own ("nodeplan").
func controllerOf(msg string) string {
	if c, ok := controllerOfMessage[msg]; ok {
		return c
	}
	for prefix, c := range map[string]string{"could not launch nodeclaim": "nodeclaim.lifecycle", "could not provision": "provisioner"} {
		if strings.HasPrefix(msg, prefix) {
			return c
		}
	}
	switch {
	case strings.Contains(msg, "drift"):
		return "nodeclaim.disruption"
	case strings.Contains(msg, "static"):
		return "static.provisioning"
	}
	return "nodeplan"
}

// controllerHandler adds the "controller" key to every record (controllerOf its message),
// unless the record or the logger already names one.
type controllerHandler struct {
	slog.Handler
	named bool
}

func (h controllerHandler) Handle(ctx context.Context, r slog.Record) error {
	if !h.named {
		named := false
		r.Attrs(func(a slog.Attr) bool {
			named = a.Key == "controller"
			return !named
		})
		if !named {
			r = r.Clone()
			r.AddAttrs(slog.String("controller", controllerOf(r.Message)))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h controllerHandler) WithAttrs(as []slog.Attr) slog.Handler {
	named := h.named
	for _, a := range as {
		named = named || a.Key == "controller"
	}
	return controllerHandler{Handler: h.Handler.WithAttrs(as), named: named}
}

func (h controllerHandler) WithGroup(name string) slog.Handler {
	return controllerHandler{Handler: h.Handler.WithGroup(name), named: h.named}
}
