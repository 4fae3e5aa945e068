package ec2test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// LaunchTemplateUserData returns the user data of every CreateLaunchTemplate call the server
// received, base64-decoded, in order: what the instances launched from them boot with.
func (s *Server) LaunchTemplateUserData() ([]string, error) {
	var out []string
	for i, r := range s.Requests("CreateLaunchTemplate") {
		b, err := base64.StdEncoding.DecodeString(r.Form.Get("LaunchTemplateData.UserData"))
		if err != nil {
			return nil, fmt.Errorf("ec2test: CreateLaunchTemplate call %d: LaunchTemplateData.UserData is not base64: %w", i, err)
		}
		out = append(out, string(b))
	}
	return out, nil
}

// KubeadmJoin is what a node's kubeadm reads from the JoinConfiguration a Custom node's user
// data writes to /etc/kubernetes/nodeplan-join.yaml.
type KubeadmJoin struct {
	// Token is discovery.bootstrapToken.token.
	Token string
	// KubeletArgs are nodeRegistration.kubeletExtraArgs by name.
	KubeletArgs map[string]string
}

// ReadKubeadmJoin finds and decodes the JoinConfiguration in userData (the heredoc the EC2
// provider writes); an error when there is none or it does not decode as one.
func ReadKubeadmJoin(userData string) (KubeadmJoin, error) {
	_, join, found := strings.Cut(userData, "nodeplan-join.yaml <<'NODEPLAN_EOF'\n")
	if !found {
		return KubeadmJoin{}, errors.New("ec2test: user data writes no nodeplan-join.yaml")
	}
	join, _, _ = strings.Cut(join, "\nNODEPLAN_EOF")
	var cfg struct {
		Kind      string `json:"kind"`
		Discovery struct {
			BootstrapToken struct {
				Token string `json:"token"`
			} `json:"bootstrapToken"`
		} `json:"discovery"`
		NodeRegistration struct {
			KubeletExtraArgs []struct{ Name, Value string } `json:"kubeletExtraArgs"`
		} `json:"nodeRegistration"`
	}
	if err := yaml.Unmarshal([]byte(join), &cfg); err != nil {
		return KubeadmJoin{}, fmt.Errorf("ec2test: nodeplan-join.yaml: %w", err)
	}
	if cfg.Kind != "JoinConfiguration" {
		return KubeadmJoin{}, fmt.Errorf("ec2test: nodeplan-join.yaml is a %q, want a JoinConfiguration", cfg.Kind)
	}
	out := KubeadmJoin{Token: cfg.Discovery.BootstrapToken.Token, KubeletArgs: map[string]string{}}
	for _, a := range cfg.NodeRegistration.KubeletExtraArgs {
		out.KubeletArgs[a.Name] = a.Value
	}
	return out, nil
}
