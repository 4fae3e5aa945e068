package ec2test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// operations lists every operation the server answers, keyed by the EC2 Query Action or by the
// X-Amz-Target header of the JSON protocols. To add an operation, write its handler (and the
// state it keeps, as a field of Server) in a file of its own and add one line here.
var operations = map[string]handler{
	// EC2 Query protocol, by Action.
	"DescribeSpotPriceHistory": (*Server).describeSpotPriceHistory,

	// JSON protocols, by X-Amz-Target.
	"AWSPriceListService.GetProducts": (*Server).getProducts,
}

// handler answers one call. It runs with s.mu held, so it may read and change the server's state
// freely but must not call exported methods of s. It returns the response to encode — for the
// Query protocol a struct whose fields are the children of the <Action>Response element, for the
// JSON protocols a value encoding as the response body — or an error: an *APIError is sent as
// that service error, anything else as a 500 InternalError.
type handler func(s *Server, r *Request) (any, error)

// ec2Namespace is the XML namespace of every EC2 Query response.
const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// DefaultRegion is the region of requests whose signature names none.
const DefaultRegion = "us-east-1"

// defaultEpoch is the server's clock when none is given, so answers are reproducible.
var defaultEpoch = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)

// maxRecorded bounds the requests kept per operation.
const maxRecorded = 1000

// Server is a local endpoint for EC2 and the AWS services around it, for tests. Create one with
// NewServer and point an aws.Config at it with Config. It is safe for concurrent use.
type Server struct {
	// URL is the base URL of the server, http://127.0.0.1:port, with no trailing slash.
	URL string

	srv *httptest.Server
	now func() time.Time

	mu       sync.Mutex
	nextID   int
	faults   map[string][]*queuedFault
	calls    map[string]int
	requests map[string][]Request

	// Per-area state, one field for each file of handlers.
	pricing pricingState
	spot    spotState
	compute computeState // compute.go
	queues  queueState   // ssm.go, sqs.go
}

// Option configures a Server.
type Option func(*Server)

// WithClock sets the clock the server stamps its answers with, and by which it reads "now" in
// requests. The default is a fixed instant, 2026-08-01T00:00:00Z, so answers are reproducible.
func WithClock(now func() time.Time) Option {
	return func(s *Server) { s.now = now }
}

// NewServer starts a server on a loopback port. Call Close when done.
func NewServer(opts ...Option) *Server {
	s := &Server{
		now:      func() time.Time { return defaultEpoch },
		faults:   map[string][]*queuedFault{},
		calls:    map[string]int{},
		requests: map[string][]Request{},
	}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL
	return s
}

// Close shuts the server down, waiting for calls in flight.
func (s *Server) Close() { s.srv.Close() }

// Config returns an aws.Config that sends every service's calls to s: static credentials, the
// given region (DefaultRegion if empty), a standard retryer with short backoffs and no retry
// quota, so tests of retried faults run fast and do not starve one another, and an HTTP client
// that keeps a connection up while its response is read (client.go says why the SDK's default
// does not, against a local server).
func (s *Server) Config(region string) aws.Config {
	if region == "" {
		region = DefaultRegion
	}
	return aws.Config{
		Region:       region,
		BaseEndpoint: aws.String(s.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEC2TEST", "ec2test-secret", ""),
		HTTPClient:   newHTTPClient(nil),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxBackoff = 20 * time.Millisecond
				o.RateLimiter = ratelimit.None
			})
		},
	}
}

// Request is one call the server received.
type Request struct {
	// Operation is the operation's name: the EC2 Action, or the part of X-Amz-Target after the
	// dot (GetProducts).
	Operation string
	// Region is the region named in the request's signature, or DefaultRegion.
	Region string
	// Form holds the parameters of a Query call; nil for JSON calls.
	Form url.Values
	// Body is the raw body of a JSON call; nil for Query calls.
	Body []byte
	// Header is the request's header.
	Header http.Header
}

// Calls returns how many calls of the operation the server has received, faults included.
func (s *Server) Calls(operation string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[operation]
}

// Requests returns the calls of the operation the server has received (the latest 1000), oldest
// first.
func (s *Server) Requests(operation string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests[operation]...)
}

// APIError is a service error the server answers with.
type APIError struct {
	// Code is the error code, e.g. RequestLimitExceeded or InvalidParameterValue.
	Code string
	// Message is the error message.
	Message string
	// Status is the HTTP status; 0 means 400.
	Status int
}

func (e *APIError) Error() string { return fmt.Sprintf("ec2test: %s: %s", e.Code, e.Message) }

func (e *APIError) status() int {
	if e.Status == 0 {
		return http.StatusBadRequest
	}
	return e.Status
}

// Fault replaces the server's normal answer to a call.
type Fault struct {
	// Delay holds the answer back. A call whose context ends first gets no answer.
	Delay time.Duration
	// Err, when set, is sent in place of the answer.
	Err *APIError
	// Body, when set (and Err is not), is sent with status 200 in place of the answer: use it
	// for malformed documents.
	Body string
}

type queuedFault struct {
	Fault
	left int // calls left; negative means every call
}

// Inject makes the next n calls of the operation answer with f instead of normally; n < 0 means
// every call until ClearFaults. Faults queue: each call takes the first one still pending. A
// fault with only a Delay slows the call down and then answers normally.
func (s *Server) Inject(operation string, n int, f Fault) {
	if n == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[operation] = append(s.faults[operation], &queuedFault{Fault: f, left: n})
}

// Throttle makes the next n calls of the operation fail as throttled: RequestLimitExceeded for
// EC2 Query actions, ThrottlingException for the JSON protocols.
func (s *Server) Throttle(operation string, n int) {
	code := "ThrottlingException"
	if isQueryAction(operation) {
		code = "RequestLimitExceeded"
	}
	s.Inject(operation, n, Fault{Err: &APIError{Code: code, Message: "Rate exceeded.", Status: http.StatusBadRequest}})
}

// Unavailable makes the next n calls of the operation fail with a 503 ServiceUnavailable.
func (s *Server) Unavailable(operation string, n int) {
	code := "ServiceUnavailableException"
	if isQueryAction(operation) {
		code = "Unavailable"
	}
	s.Inject(operation, n, Fault{Err: &APIError{Code: code, Message: "The service is unavailable. Please try again shortly.", Status: http.StatusServiceUnavailable}})
}

// ClearFaults drops every pending fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.faults)
}

// isQueryAction reports whether the operation is an EC2 Query action rather than a JSON one.
func isQueryAction(operation string) bool {
	_, ok := operations[operation]
	return ok && !strings.Contains(operation, ".")
}

// takeFault returns the fault the next call of operation meets, if any. s.mu must be held.
func (s *Server) takeFault(operation string) (Fault, bool) {
	q := s.faults[operation]
	if len(q) == 0 {
		return Fault{}, false
	}
	f := q[0]
	if f.left > 0 {
		f.left--
		if f.left == 0 {
			s.faults[operation] = q[1:]
		}
	}
	return f.Fault, true
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := &Request{Region: signedRegion(r.Header.Get("Authorization")), Header: r.Header.Clone()}
	key, jsonProto := r.Header.Get("X-Amz-Target"), true
	if key != "" {
		req.Operation = key[strings.LastIndexByte(key, '.')+1:]
		req.Body = body
	} else {
		jsonProto = false
		form, err := url.ParseQuery(string(body))
		if err != nil {
			s.writeQueryError(w, &APIError{Code: "MalformedQueryString", Message: err.Error()})
			return
		}
		key = form.Get("Action")
		req.Operation, req.Form = key, form
	}

	s.mu.Lock()
	s.calls[req.Operation]++
	if rs := append(s.requests[req.Operation], *req); len(rs) > maxRecorded {
		s.requests[req.Operation] = rs[len(rs)-maxRecorded:]
	} else {
		s.requests[req.Operation] = rs
	}
	fault, faulted := s.takeFault(req.Operation)
	s.mu.Unlock()

	if faulted && fault.Delay > 0 {
		t := time.NewTimer(fault.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}

	var resp any
	switch {
	case faulted && fault.Err != nil:
		err = fault.Err
	case faulted && fault.Body != "":
		w.Header().Set("Content-Type", responseContentType(r, jsonProto))
		io.WriteString(w, fault.Body)
		return
	default:
		h, ok := operations[key]
		if !ok {
			if jsonProto {
				err = &APIError{Code: "UnknownOperationException", Message: "ec2test does not implement " + key}
			} else {
				err = &APIError{Code: "InvalidAction", Message: fmt.Sprintf("The action %s is not valid for this web service.", key)}
			}
			break
		}
		s.mu.Lock()
		resp, err = h(s, req)
		s.mu.Unlock()
	}

	if err != nil {
		var apiErr *APIError
		if !errors.As(err, &apiErr) {
			apiErr = &APIError{Code: "InternalError", Message: err.Error(), Status: http.StatusInternalServerError}
			if jsonProto {
				apiErr.Code = "InternalErrorException"
			}
		}
		if jsonProto {
			s.writeJSONError(w, r, apiErr)
		} else {
			s.writeQueryError(w, apiErr)
		}
		return
	}
	if jsonProto {
		s.writeJSON(w, r, resp)
	} else {
		s.writeQuery(w, req.Operation, resp)
	}
}

// signedRegion reads the region from a SigV4 Authorization header:
// "AWS4-HMAC-SHA256 Credential=AKID/20260801/us-east-1/ec2/aws4_request, …".
func signedRegion(auth string) string {
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return DefaultRegion
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) < 5 || parts[2] == "" {
		return DefaultRegion
	}
	return parts[2]
}

func responseContentType(r *http.Request, jsonProto bool) string {
	if !jsonProto {
		return "text/xml;charset=UTF-8"
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		return ct
	}
	return "application/x-amz-json-1.1"
}

// requestID returns a fresh request ID. s.mu must not be held.
func (s *Server) requestID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("ec2test0-0000-4000-8000-%012d", s.nextID)
}

func (s *Server) writeQuery(w http.ResponseWriter, action string, resp any) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	fmt.Fprintf(&buf, `<%sResponse xmlns="%s"><requestId>%s</requestId>`, action, ec2Namespace, s.requestID())
	// The handler's struct supplies the children; encoding it under a throwaway element and
	// keeping only the inner part spares every handler the envelope.
	var inner bytes.Buffer
	if resp != nil {
		if err := xml.NewEncoder(&inner).EncodeElement(resp, xml.StartElement{Name: xml.Name{Local: "x"}}); err != nil {
			s.writeQueryError(w, &APIError{Code: "InternalError", Message: err.Error(), Status: http.StatusInternalServerError})
			return
		}
	}
	b := inner.Bytes()
	if len(b) >= len("<x></x>") {
		b = b[len("<x>") : len(b)-len("</x>")]
	}
	buf.Write(b)
	fmt.Fprintf(&buf, "</%sResponse>", action)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Write(buf.Bytes())
}

func (s *Server) writeQueryError(w http.ResponseWriter, e *APIError) {
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	buf.WriteString("<Response><Errors><Error><Code>")
	xml.EscapeText(&buf, []byte(e.Code))
	buf.WriteString("</Code><Message>")
	xml.EscapeText(&buf, []byte(e.Message))
	buf.WriteString("</Message></Error></Errors><RequestID>")
	buf.WriteString(s.requestID())
	buf.WriteString("</RequestID></Response>")
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(e.status())
	w.Write(buf.Bytes())
}

func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, resp any) {
	b, err := json.Marshal(resp)
	if err != nil {
		s.writeJSONError(w, r, &APIError{Code: "InternalErrorException", Message: err.Error(), Status: http.StatusInternalServerError})
		return
	}
	w.Header().Set("Content-Type", responseContentType(r, true))
	w.Header().Set("X-Amzn-RequestId", s.requestID())
	w.Write(b)
}

func (s *Server) writeJSONError(w http.ResponseWriter, r *http.Request, e *APIError) {
	b, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{e.Code, e.Message})
	w.Header().Set("Content-Type", responseContentType(r, true))
	w.Header().Set("X-Amzn-RequestId", s.requestID())
	w.Header().Set("X-Amzn-ErrorType", e.Code)
	w.WriteHeader(e.status())
	w.Write(b)
}

// Helpers for Query handlers.

// listParam returns the values of a flattened Query list, name.1, name.2, … in order.
func listParam(form url.Values, name string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[name+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v...)
	}
}

// queryFilters returns the Filter.N.Name / Filter.N.Value.M parameters of a Query call, as
// name → values.
func queryFilters(form url.Values) map[string][]string {
	out := map[string][]string{}
	for i := 1; ; i++ {
		prefix := "Filter." + strconv.Itoa(i) + "."
		name, ok := form[prefix+"Name"]
		if !ok || len(name) == 0 {
			return out
		}
		out[name[0]] = append(out[name[0]], listParam(form, prefix+"Value")...)
	}
}

// invalidParameter is the error EC2 answers a malformed parameter with.
func invalidParameter(name, value string) *APIError {
	return &APIError{Code: "InvalidParameterValue", Message: fmt.Sprintf("Value (%s) for parameter %s is invalid.", value, name)}
}
