package ec2test

import (
	"context"
	"io"
	"net"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// The HTTP client Config hands every service.
//
// The SDK closes a request's body as soon as the response's headers arrive (smithy-go's
// ClientHandler, after http.Client.Do returns), but net/http's writer goroutine may not be done
// with the body yet: after sending Content-Length bytes it reads on once, to make sure the body
// holds no more. The SDK's body wrapper answers that read, made through io.WriterTo, with io.EOF
// as an error once it is closed; net/http takes the error for a failed write and closes the
// connection — under the response the SDK is still reading, which then fails with "use of
// closed network connection". The response can only come first when the server has read the
// whole body before the writer goroutine runs again: rare against a distant endpoint, but
// against this local server on a loaded machine it failed about one test run in ten under
// -race, all three attempts of a call in a row when the response was a large catalog page.
// Handed the same body as a plain reader, net/http reads it with Read, which ends a closed body
// with io.EOF — the normal end of a copy — and the connection stays up.

// newHTTPClient returns the SDK's default transport (dialing with dial when it is set) behind
// plainBodies.
func newHTTPClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	tr := awshttp.NewBuildableClient().GetTransport()
	if dial != nil {
		tr.DialContext = dial
	}
	return &http.Client{Transport: plainBodies{tr}}
}

// plainBodies sends each request with its body seen only as an io.ReadCloser.
type plainBodies struct{ next http.RoundTripper }

func (t plainBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return t.next.RoundTrip(r)
	}
	out := r.Clone(r.Context())
	out.Body = plainBody{r.Body}
	return t.next.RoundTrip(out)
}

// plainBody hides every method of the body but Read and Close.
type plainBody struct{ io.ReadCloser }
