package ec2

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/nodeplan/nodeplan"
	corev1 "k8s.io/api/core/v1"
)

// KubeadmJoin makes nodes of self-managed clusters join with kubeadm and a bootstrap token. It
// needs no EKS API and no cluster-specific image: any image with kubeadm, a kubelet and a
// container runtime installed will do (select it with amiSelectorTerms and amiFamily Custom).
type KubeadmJoin struct {
	// Endpoint is the API server, host:port; empty means Cluster.Endpoint without its scheme.
	Endpoint string
	// Token is a bootstrap token, [a-z0-9]{6}.[a-z0-9]{16}. Rotate it by updating Options; the
	// new userData gives new launch templates, and running nodes drift (NodeClassDrift) only if
	// the class changed.
	Token string
	// CACertHashes pin the cluster CA, "sha256:<hex>"; at least one is required.
	CACertHashes []string
	// Template, when set, replaces the default script: a text/template executed with
	// [KubeadmData].
	Template string
}

// KubeadmData is what a kubeadm userData template is executed with.
type KubeadmData struct {
	Endpoint     string
	Token        string
	CACertHashes []string
	// Labels is the kubelet --node-labels value, "k=v,k=v", sorted.
	Labels string
	// Taints are the taints the node registers with ("key=value:Effect").
	Taints []string
	// MaxPods is the kubelet's max-pods, or 0 to keep its default.
	MaxPods int32
	// ClusterDNS is the cluster DNS IP, or "".
	ClusterDNS string
	// UserData is the node class's own userData, run before the join.
	UserData string
}

func (k *KubeadmJoin) validate() error {
	var errs []error
	if parts := strings.Split(k.Token, "."); len(parts) != 2 || len(parts[0]) != 6 || len(parts[1]) != 16 {
		errs = append(errs, errors.New("ec2: Cluster.Kubeadm.Token is not a bootstrap token (abcdef.0123456789abcdef)"))
	}
	if len(k.CACertHashes) == 0 {
		errs = append(errs, errors.New("ec2: Cluster.Kubeadm.CACertHashes needs at least one sha256:<hex> hash"))
	}
	if k.Template != "" {
		if _, err := template.New("kubeadm").Parse(k.Template); err != nil {
			errs = append(errs, fmt.Errorf("ec2: Cluster.Kubeadm.Template: %w", err))
		}
	}
	return joinErrors(errs)
}

const defaultKubeadmTemplate = `#!/bin/bash
set -euo pipefail
{{- if .UserData}}
# node class userData
{{.UserData}}
{{- end}}
mkdir -p /etc/kubernetes
cat > /etc/kubernetes/nodeplan-join.yaml <<'NODEPLAN_EOF'
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: "{{.Endpoint}}"
    token: "{{.Token}}"
    caCertHashes:
{{- range .CACertHashes}}
    - "{{.}}"
{{- end}}
nodeRegistration:
  taints:
{{- range .Taints}}
{{- with parseTaint .}}
    - key: "{{.Key}}"
{{- if .Value}}
      value: "{{.Value}}"
{{- end}}
      effect: "{{.Effect}}"
{{- end}}
{{- end}}
  kubeletExtraArgs:
    - name: node-labels
      value: "{{.Labels}}"
{{- if .MaxPods}}
    - name: max-pods
      value: "{{.MaxPods}}"
{{- end}}
{{- if .ClusterDNS}}
    - name: cluster-dns
      value: "{{.ClusterDNS}}"
{{- end}}
NODEPLAN_EOF
kubeadm join --config /etc/kubernetes/nodeplan-join.yaml
`

var kubeadmFuncs = template.FuncMap{
	"parseTaint": func(t string) corev1.Taint {
		kv, effect, _ := strings.Cut(t, ":")
		k, v, _ := strings.Cut(kv, "=")
		return corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)}
	},
}

// userDataInput is what goes into a node's userData besides the cluster.
type userDataInput struct {
	family     nodeplan.AMIFamily
	classData  string
	labels     map[string]string
	taints     []corev1.Taint
	maxPods    int32
	clusterDNS string
}

// kubeletLabelAllowed reports whether the kubelet may set the label on itself: labels in the
// kubernetes.io and k8s.io namespaces are refused by the NodeRestriction admission plugin except
// for a few well-known ones.
func kubeletLabelAllowed(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	if !strings.HasSuffix(prefix, "kubernetes.io") && !strings.HasSuffix(prefix, "k8s.io") {
		return true
	}
	switch key {
	case nodeplan.LabelArch, nodeplan.LabelOS, nodeplan.LabelInstanceType, nodeplan.LabelZone, nodeplan.LabelRegion, nodeplan.LabelHostname:
		return true
	}
	return strings.HasSuffix(prefix, "kubelet.kubernetes.io") || strings.HasSuffix(prefix, "node.kubernetes.io")
}

func (u *userDataInput) labelString() string {
	var parts []string
	for _, k := range sortedKeys(u.labels) {
		if kubeletLabelAllowed(k) {
			parts = append(parts, k+"="+u.labels[k])
		}
	}
	return strings.Join(parts, ",")
}

func taintString(t corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

// renderUserData returns the node's userData, base64-encoded as launch templates take it.
func (p *Provider) renderUserData(u userDataInput) (string, error) {
	var raw string
	var err error
	switch {
	case u.family == nodeplan.AMIFamilyBottlerocket:
		raw = p.bottlerocketUserData(u)
	case u.family == nodeplan.AMIFamilyCustom && p.opts.Cluster.Kubeadm != nil:
		raw, err = p.kubeadmUserData(u)
	case u.family == nodeplan.AMIFamilyCustom:
		raw = u.classData
	case u.family == nodeplan.AMIFamilyAL2023 || u.family == "":
		raw = p.nodeadmUserData(u)
	default:
		return "", fmt.Errorf("ec2: AMI family %s is not supported by nodeplan (use AL2023, Bottlerocket or Custom)", u.family)
	}
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString([]byte(raw)), nil
}

func (p *Provider) kubeadmUserData(u userDataInput) (string, error) {
	k := p.opts.Cluster.Kubeadm
	endpoint := k.Endpoint
	if endpoint == "" {
		endpoint = strings.TrimPrefix(strings.TrimPrefix(p.opts.Cluster.Endpoint, "https://"), "http://")
	}
	data := KubeadmData{Endpoint: endpoint, Token: k.Token, CACertHashes: k.CACertHashes, Labels: u.labelString(),
		MaxPods: u.maxPods, ClusterDNS: u.clusterDNS, UserData: u.classData}
	for _, t := range u.taints {
		data.Taints = append(data.Taints, taintString(t))
	}
	text := k.Template
	if text == "" {
		text = defaultKubeadmTemplate
	}
	tmpl, err := template.New("kubeadm").Funcs(kubeadmFuncs).Parse(text)
	if err != nil {
		return "", fmt.Errorf("ec2: kubeadm template: %w", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf("ec2: kubeadm template: %w", err)
	}
	return b.String(), nil
}

const mimeBoundary = "//"

// nodeadmUserData builds AL2023's MIME multipart archive: the class's own part first, then the
// NodeConfig that joins the cluster.
func (p *Provider) nodeadmUserData(u userDataInput) string {
	c := p.opts.Cluster
	var nc strings.Builder
	nc.WriteString("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n")
	fmt.Fprintf(&nc, "    name: %s\n    apiServerEndpoint: %s\n", strconv.Quote(c.Name), strconv.Quote(c.Endpoint))
	fmt.Fprintf(&nc, "    certificateAuthority: %s\n    cidr: %s\n", base64.StdEncoding.EncodeToString(c.CABundle), strconv.Quote(c.ServiceCIDR))
	nc.WriteString("  kubelet:\n    config:\n")
	if u.maxPods > 0 {
		fmt.Fprintf(&nc, "      maxPods: %d\n", u.maxPods)
	}
	if u.clusterDNS != "" {
		fmt.Fprintf(&nc, "      clusterDNS:\n      - %s\n", strconv.Quote(u.clusterDNS))
	}
	if len(u.taints) > 0 {
		nc.WriteString("      registerWithTaints:\n")
		for _, t := range u.taints {
			fmt.Fprintf(&nc, "      - key: %s\n        value: %s\n        effect: %s\n", strconv.Quote(t.Key), strconv.Quote(t.Value), strconv.Quote(string(t.Effect)))
		}
	}
	fmt.Fprintf(&nc, "    flags:\n    - %s\n", strconv.Quote("--node-labels="+u.labelString()))

	var b strings.Builder
	fmt.Fprintf(&b, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=%q\n\n", mimeBoundary)
	if d := strings.TrimSpace(u.classData); d != "" {
		ct := `text/x-shellscript; charset="us-ascii"`
		if strings.HasPrefix(d, "apiVersion: node.eks.aws") {
			ct = "application/node.eks.aws"
		}
		fmt.Fprintf(&b, "--%s\nContent-Type: %s\n\n%s\n\n", mimeBoundary, ct, d)
	}
	fmt.Fprintf(&b, "--%s\nContent-Type: application/node.eks.aws\n\n%s\n--%s--\n", mimeBoundary, nc.String(), mimeBoundary)
	return b.String()
}

// bottlerocketUserData builds Bottlerocket's TOML settings. The class's own TOML is appended; it
// must not repeat the [settings.kubernetes] keys set here.
func (p *Provider) bottlerocketUserData(u userDataInput) string {
	c := p.opts.Cluster
	var b strings.Builder
	b.WriteString("[settings.kubernetes]\n")
	fmt.Fprintf(&b, "api-server = %s\ncluster-certificate = %s\ncluster-name = %s\n", strconv.Quote(c.Endpoint),
		strconv.Quote(base64.StdEncoding.EncodeToString(c.CABundle)), strconv.Quote(c.Name))
	if u.clusterDNS != "" {
		fmt.Fprintf(&b, "cluster-dns-ip = %s\n", strconv.Quote(u.clusterDNS))
	}
	if u.maxPods > 0 {
		fmt.Fprintf(&b, "max-pods = %d\n", u.maxPods)
	}
	b.WriteString("\n[settings.kubernetes.node-labels]\n")
	for _, k := range sortedKeys(u.labels) {
		if kubeletLabelAllowed(k) {
			fmt.Fprintf(&b, "%s = %s\n", strconv.Quote(k), strconv.Quote(u.labels[k]))
		}
	}
	if len(u.taints) > 0 {
		b.WriteString("\n[settings.kubernetes.node-taints]\n")
		byKey := map[string][]string{}
		for _, t := range u.taints {
			byKey[t.Key] = append(byKey[t.Key], t.Value+":"+string(t.Effect))
		}
		for _, k := range sortedKeys(byKey) {
			vals := byKey[k]
			quoted := make([]string, len(vals))
			for i, v := range vals {
				quoted[i] = strconv.Quote(v)
			}
			fmt.Fprintf(&b, "%s = [%s]\n", strconv.Quote(k), strings.Join(quoted, ", "))
		}
	}
	if d := strings.TrimSpace(u.classData); d != "" {
		b.WriteString("\n" + d + "\n")
	}
	return b.String()
}

// nodeTaints returns the taints a node registers with: the claim's, its startup taints, and
// karpenter.sh/unregistered (NoExecute), which the controller removes once the node registered.
func nodeTaints(c *nodeplan.NodeClaim) []corev1.Taint {
	out := slices.Concat(c.Taints, c.StartupTaints)
	out = append(out, corev1.Taint{Key: nodeplan.TaintUnregistered, Effect: corev1.TaintEffectNoExecute})
	return out
}
