package ec2test

import (
	"encoding/json"
	"regexp"
	"strings"
)

func init() {
	operations["AmazonSSM.GetParameter"] = (*Server).getParameter
}

// SetParameter sets an SSM parameter's value, replacing the built-in answers.
func (s *Server) SetParameter(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	s.compute.ssm[name] = value
}

// The public parameters naming EKS-optimized images: any Kubernetes version resolves to the
// seeded image of the architecture.
var (
	al2023Param       = regexp.MustCompile(`^/aws/service/eks/optimized-ami/[^/]+/amazon-linux-2023/(x86_64|arm64)/[^/]+/[^/]+/image_id$`)
	bottlerocketParam = regexp.MustCompile(`^/aws/service/bottlerocket/aws-k8s-[^/]+/(x86_64|arm64)/[^/]+/image_id$`)
)

func (s *Server) getParameter(r *Request) (any, error) {
	s.seedCompute()
	var in struct{ Name string }
	if err := json.Unmarshal(r.Body, &in); err != nil {
		return nil, &APIError{Code: "ValidationException", Message: err.Error()}
	}
	v, ok := s.compute.ssm[in.Name]
	if !ok {
		if m := al2023Param.FindStringSubmatch(in.Name); m != nil {
			v, ok = "ami-al2023"+archSuffix(m[1]), true
		} else if m := bottlerocketParam.FindStringSubmatch(in.Name); m != nil && !strings.Contains(in.Name, "nvidia") {
			v, ok = "ami-bottlerocket"+archSuffix(m[1]), true
		}
	}
	if !ok {
		return nil, &APIError{Code: "ParameterNotFound", Message: "Parameter " + in.Name + " not found."}
	}
	type param struct {
		Name, Type, Value string
		Version           int64
	}
	return map[string]param{"Parameter": {Name: in.Name, Type: "String", Value: v, Version: 1}}, nil
}
