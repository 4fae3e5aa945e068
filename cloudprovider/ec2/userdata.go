package ec2

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/nodeplan/nodeplan"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// KubeadmJoin makes nodes of self-managed clusters join with kubeadm and a bootstrap token. It
// needs no EKS API and no cluster-specific image: any image with kubeadm, a kubelet, curl and a
// container runtime installed will do (select it with amiSelectorTerms and amiFamily Custom).
//
// The default join sets the node's provider ID (aws:///<zone>/<instance-id>, read from the
// instance metadata service with IMDSv2 at boot), so nodes register without the AWS
// cloud-controller-manager, labels the node with its topology.k8s.aws/zone-id, and writes the node class's kubelet settings as a kubeadm patch of
// the KubeletConfiguration.
type KubeadmJoin struct {
	// Endpoint is the API server, host:port; empty means Cluster.Endpoint without its scheme.
	Endpoint string
	// Token is a bootstrap token, [a-z0-9]{6}.[a-z0-9]{16}, used for launches whose NodeClaim
	// carries no BootstrapToken. Leave it empty and mint a short-lived token per launch instead
	// (NodeClaim.BootstrapToken): a token given here is written into every node's userData and
	// lives as long as the provider.
	Token string
	// CACertHashes pin the cluster CA, "sha256:<hex>"; at least one is required.
	CACertHashes []string
	// Template, when set, replaces the default script: a text/template executed with
	// [KubeadmData].
	Template string
}

// KubeadmData is what a kubeadm userData template is executed with.
type KubeadmData struct {
	Endpoint string
	// Token is the bootstrap token of this launch: the NodeClaim's, else KubeadmJoin.Token.
	Token        string
	CACertHashes []string
	// Labels is the kubelet --node-labels value, "k=v,k=v", sorted.
	Labels string
	// Taints are the taints the node registers with ("key=value:Effect").
	Taints []string
	// MaxPods is the kubelet's max-pods (also in KubeletConfig).
	MaxPods int32
	// ClusterDNS is the cluster DNS IP, or "" (also in KubeletConfig).
	ClusterDNS string
	// KubeletConfig is a KubeletConfiguration document (YAML) with every kubelet setting of the
	// node: the default template applies it as a kubeadm "kubeletconfiguration" merge patch.
	KubeletConfig string
	// UserData is the node class's own userData, run before the join.
	UserData string
}

var bootstrapToken = func(s string) bool {
	id, secret, ok := strings.Cut(s, ".")
	valid := func(p string, n int) bool {
		return len(p) == n && strings.IndexFunc(p, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) < 0
	}
	return ok && valid(id, 6) && valid(secret, 16)
}

func (k *KubeadmJoin) validate() error {
	var errs []error
	if k.Token != "" && !bootstrapToken(k.Token) {
		errs = append(errs, errors.New("ec2: Cluster.Kubeadm.Token is not a bootstrap token (abcdef.0123456789abcdef)"))
	}
	if len(k.CACertHashes) == 0 {
		errs = append(errs, errors.New("ec2: Cluster.Kubeadm.CACertHashes needs at least one sha256:<hex> hash"))
	}
	if k.Template != "" {
		if _, err := template.New("kubeadm").Funcs(kubeadmFuncs).Parse(k.Template); err != nil {
			errs = append(errs, fmt.Errorf("ec2: Cluster.Kubeadm.Template: %w", err))
		}
	}
	return joinErrors(errs)
}

// The default kubeadm join. IMDSv2 gives the instance id and zone for the provider ID; the
// placeholders are replaced after the heredocs, which are quoted so nothing in the class's
// labels or settings is expanded by the shell.
const defaultKubeadmTemplate = `#!/bin/bash
set -euo pipefail
{{- if .UserData}}
# node class userData
{{.UserData}}
{{- end}}
imds=http://169.254.169.254/latest
imds_token=$(curl -sSf --retry 10 --retry-connrefused -X PUT "$imds/api/token" -H "X-aws-ec2-metadata-token-ttl-seconds: 300")
instance_id=$(curl -sSf --retry 10 -H "X-aws-ec2-metadata-token: $imds_token" "$imds/meta-data/instance-id")
zone=$(curl -sSf --retry 10 -H "X-aws-ec2-metadata-token: $imds_token" "$imds/meta-data/placement/availability-zone")
zone_id=$(curl -sSf --retry 10 -H "X-aws-ec2-metadata-token: $imds_token" "$imds/meta-data/placement/availability-zone-id")
mkdir -p /etc/kubernetes/nodeplan-patches
cat > /etc/kubernetes/nodeplan-patches/kubeletconfiguration+merge.yaml <<'NODEPLAN_EOF'
{{.KubeletConfig -}}
NODEPLAN_EOF
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
      value: "{{.Labels}}{{if .Labels}},{{end}}topology.k8s.aws/zone-id=@ZONE_ID@"
    - name: provider-id
      value: "aws:///@ZONE@/@INSTANCE_ID@"
patches:
  directory: /etc/kubernetes/nodeplan-patches
NODEPLAN_EOF
sed -i "s|@ZONE@|${zone}|; s|@ZONE_ID@|${zone_id}|; s|@INSTANCE_ID@|${instance_id}|" /etc/kubernetes/nodeplan-join.yaml
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
	family    AMIFamily
	classData string
	labels    map[string]string
	taints    []corev1.Taint
	kubelet   nodeKubelet
	// token is the launch's bootstrap token (kubeadm), or "".
	token string
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

// errAL2 explains why AL2 nodes are not launched, and what to use instead.
var errAL2 = errors.New("ec2: AMI family AL2 is not supported: Amazon Linux 2 is end-of-life and EKS publishes no AL2 images for Kubernetes 1.33 and later; " +
	"use amiFamily AL2023 (amiSelectorTerms: [{alias: al2023@latest}]) or Bottlerocket")

// renderUserData returns the node's userData, base64-encoded as launch templates take it.
func (p *Provider) renderUserData(u userDataInput) (string, error) {
	var raw string
	var err error
	switch {
	case u.family == AMIFamilyBottlerocket:
		raw, err = p.bottlerocketUserData(u)
	case u.family == AMIFamilyCustom && p.opts.Cluster.Kubeadm != nil:
		raw, err = p.kubeadmUserData(u)
	case u.family == AMIFamilyCustom:
		raw = u.classData
	case u.family == AMIFamilyAL2023 || u.family == "":
		raw, err = p.nodeadmUserData(u)
	case u.family == AMIFamilyAL2:
		return "", errAL2
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
	token := cmpOr(u.token, k.Token)
	switch {
	case token == "":
		return "", errors.New("ec2: kubeadm join needs a bootstrap token: set NodeClaim.BootstrapToken for the launch (or Cluster.Kubeadm.Token)")
	case !bootstrapToken(token):
		return "", errors.New("ec2: NodeClaim.BootstrapToken is not a bootstrap token (abcdef.0123456789abcdef)")
	}
	kc, err := yaml.Marshal(struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		nodeKubelet
	}{"kubelet.config.k8s.io/v1beta1", "KubeletConfiguration", u.kubelet})
	if err != nil {
		return "", fmt.Errorf("ec2: kubelet configuration: %w", err)
	}
	data := KubeadmData{Endpoint: endpoint, Token: token, CACertHashes: k.CACertHashes, Labels: u.labelString(),
		MaxPods: u.kubelet.MaxPods, KubeletConfig: string(kc), UserData: u.classData}
	if len(u.kubelet.ClusterDNS) > 0 {
		data.ClusterDNS = u.kubelet.ClusterDNS[0]
	}
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

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

const mimeBoundary = "//"

// Content types of AL2023 userData parts.
const (
	contentTypeNodeConfig = "application/node.eks.aws"
	contentTypeShell      = `text/x-shellscript; charset="us-ascii"`
)

// nodeConfig is nodeadm's NodeConfig (node.eks.aws/v1alpha1), the parts the provider sets.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster struct {
		Name                 string `json:"name"`
		APIServerEndpoint    string `json:"apiServerEndpoint"`
		CertificateAuthority []byte `json:"certificateAuthority"`
		CIDR                 string `json:"cidr"`
	} `json:"cluster"`
	Kubelet struct {
		Config nodeadmKubelet `json:"config"`
		Flags  []string       `json:"flags,omitempty"`
	} `json:"kubelet"`
}

type nodeadmKubelet struct {
	nodeKubelet
	RegisterWithTaints []corev1.Taint `json:"registerWithTaints,omitempty"`
}

// userDataPart is one part of a MIME multipart userData.
type userDataPart struct {
	contentType string
	body        string
}

// nodeadmUserData builds AL2023's MIME multipart archive: the class's own parts first, then the
// NodeConfig that joins the cluster. nodeadm merges NodeConfig documents in order, so the
// provider's settings (cluster, labels, taints and every kubelet setting the capacity model
// depends on) win over the same keys in the class's NodeConfig; set them in the class's
// kubelet field instead. The class's other NodeConfig keys are kept.
func (p *Provider) nodeadmUserData(u userDataInput) (string, error) {
	c := p.opts.Cluster
	nc := nodeConfig{APIVersion: "node.eks.aws/v1alpha1", Kind: "NodeConfig"}
	nc.Spec.Cluster.Name = c.Name
	nc.Spec.Cluster.APIServerEndpoint = c.Endpoint
	nc.Spec.Cluster.CertificateAuthority = c.CABundle
	nc.Spec.Cluster.CIDR = c.ServiceCIDR
	nc.Spec.Kubelet.Config = nodeadmKubelet{nodeKubelet: u.kubelet, RegisterWithTaints: u.taints}
	nc.Spec.Kubelet.Flags = []string{"--node-labels=" + u.labelString()}
	ours, err := yaml.Marshal(nc)
	if err != nil {
		return "", fmt.Errorf("ec2: NodeConfig: %w", err)
	}
	parts, err := classUserDataParts(u.classData)
	if err != nil {
		return "", err
	}
	parts = append(parts, userDataPart{contentTypeNodeConfig, string(ours)})
	var b strings.Builder
	fmt.Fprintf(&b, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=%q\n\n", mimeBoundary)
	for _, part := range parts {
		fmt.Fprintf(&b, "--%s\nContent-Type: %s\n\n%s\n\n", mimeBoundary, part.contentType, strings.TrimRight(part.body, "\n"))
	}
	fmt.Fprintf(&b, "--%s--\n", mimeBoundary)
	return b.String(), nil
}

// classUserDataParts splits a class's AL2023 userData into MIME parts. A MIME multipart
// document keeps its parts and their content types. Anything else is one part: a NodeConfig
// when it is a YAML mapping — whatever precedes it (a "---" document marker, comments) — and
// a shell script otherwise.
func classUserDataParts(d string) ([]userDataPart, error) {
	trimmed := strings.TrimSpace(d)
	if trimmed == "" {
		return nil, nil
	}
	if strings.HasPrefix(trimmed, "MIME-Version:") || strings.HasPrefix(trimmed, "Content-Type:") {
		return parseMIME(trimmed)
	}
	ct := contentTypeShell
	var m map[string]any
	if err := yaml.Unmarshal([]byte(trimmed), &m); err == nil && len(m) > 0 {
		ct = contentTypeNodeConfig
	}
	return []userDataPart{{ct, trimmed}}, nil
}

// parseMIME reads a MIME multipart document into its parts.
func parseMIME(d string) ([]userDataPart, error) {
	msg, err := mail.ReadMessage(strings.NewReader(d + "\n"))
	if err != nil {
		return nil, fmt.Errorf("ec2: spec.userData is not a valid MIME document: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mediaType, "multipart/") || params["boundary"] == "" {
		return nil, fmt.Errorf("ec2: spec.userData: a MIME document needs a multipart Content-Type with a boundary (got %q)", msg.Header.Get("Content-Type"))
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var parts []userDataPart
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return nil, fmt.Errorf("ec2: spec.userData: reading MIME part %d: %w", len(parts)+1, err)
		}
		body, err := io.ReadAll(part)
		if err != nil {
			return nil, fmt.Errorf("ec2: spec.userData: reading MIME part %d: %w", len(parts)+1, err)
		}
		ct := part.Header.Get("Content-Type")
		if ct == "" {
			ct = contentTypeShell
		}
		parts = append(parts, userDataPart{ct, string(body)})
	}
}

// bottlerocketUserData builds Bottlerocket's TOML settings, merged with the class's own TOML
// as Karpenter merges them: the cluster settings, the taints and every kubelet setting the
// provider writes replace the class's; node labels are merged, the provider's winning; every
// other key of the class's TOML is kept.
func (p *Provider) bottlerocketUserData(u userDataInput) (string, error) {
	doc, err := parseTOML(u.classData)
	if err != nil {
		return "", fmt.Errorf("ec2: spec.userData (Bottlerocket TOML): %w", err)
	}
	c := p.opts.Cluster
	k := u.kubelet
	kube := []string{"settings", "kubernetes"}
	set := func(key string, raw string) { doc.set(append(slices.Clone(kube), key), raw) }
	set("api-server", strconv.Quote(c.Endpoint))
	set("cluster-certificate", strconv.Quote(base64.StdEncoding.EncodeToString(c.CABundle)))
	set("cluster-name", strconv.Quote(c.Name))
	if len(k.ClusterDNS) > 0 {
		set("cluster-dns-ip", strconv.Quote(k.ClusterDNS[0]))
	}
	if k.MaxPods > 0 {
		set("max-pods", strconv.Itoa(int(k.MaxPods)))
	}
	table := func(key string, m map[string]string) {
		if m == nil {
			return
		}
		doc.remove(append(slices.Clone(kube), key))
		for _, name := range sortedKeys(m) {
			doc.set(append(slices.Clone(kube), key, name), strconv.Quote(m[name]))
		}
	}
	table("kube-reserved", k.KubeReserved)
	table("system-reserved", k.SystemReserved)
	table("eviction-hard", k.EvictionHard)
	table("eviction-soft", k.EvictionSoft)
	table("eviction-soft-grace-period", k.EvictionSoftGracePeriod)
	if k.EvictionMaxPodGracePeriod > 0 {
		set("eviction-max-pod-grace-period", strconv.Itoa(int(k.EvictionMaxPodGracePeriod)))
	}
	if k.ImageGCHighThresholdPercent != nil {
		set("image-gc-high-threshold-percent", strconv.Quote(strconv.Itoa(int(*k.ImageGCHighThresholdPercent))))
	}
	if k.ImageGCLowThresholdPercent != nil {
		set("image-gc-low-threshold-percent", strconv.Quote(strconv.Itoa(int(*k.ImageGCLowThresholdPercent))))
	}
	if k.CPUCFSQuota != nil {
		set("cpu-cfs-quota-enforced", strconv.FormatBool(*k.CPUCFSQuota))
	}
	for _, name := range sortedKeys(u.labels) {
		if kubeletLabelAllowed(name) {
			doc.set(append(slices.Clone(kube), "node-labels", name), strconv.Quote(u.labels[name]))
		}
	}
	doc.remove(append(slices.Clone(kube), "node-taints"))
	byKey := map[string][]string{}
	for _, t := range u.taints {
		byKey[t.Key] = append(byKey[t.Key], strconv.Quote(t.Value+":"+string(t.Effect)))
	}
	for _, key := range sortedKeys(byKey) {
		doc.set(append(slices.Clone(kube), "node-taints", key), "["+strings.Join(byKey[key], ", ")+"]")
	}
	return doc.String(), nil
}

// nodeTaints returns the taints a node registers with: the claim's, its startup taints, and
// karpenter.sh/unregistered (NoExecute), which the controller removes once the node registered.
func nodeTaints(c *nodeplan.NodeClaim) []corev1.Taint {
	out := slices.Concat(c.Taints, c.StartupTaints)
	out = append(out, corev1.Taint{Key: nodeplan.TaintUnregistered, Effect: corev1.TaintEffectNoExecute})
	return out
}
