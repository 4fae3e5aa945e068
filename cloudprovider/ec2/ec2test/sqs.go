package ec2test

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"time"
)

func init() {
	operations["AmazonSQS.ReceiveMessage"] = (*Server).receiveMessage
	operations["AmazonSQS.DeleteMessage"] = (*Server).deleteMessage
	operations["AmazonSQS.SendMessage"] = (*Server).sendMessage
	operations["AmazonSQS.GetQueueUrl"] = (*Server).getQueueURL
}

// QueueURL is the URL the server gives the queue called name, as SQS gives it in
// DefaultRegion for the test account.
func QueueURL(name string) string {
	return "https://sqs." + DefaultRegion + ".amazonaws.com/123456789012/" + name
}

// CreateQueue makes the empty queue called name, so GetQueueUrl finds it, and returns its URL
// (QueueURL). A queue that exists already is kept with its messages.
func (s *Server) CreateQueue(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	url := QueueURL(name)
	if s.queues.queues == nil {
		s.queues.queues = map[string][]*message{}
	}
	if _, ok := s.queues.queues[url]; !ok {
		s.queues.queues[url] = []*message{}
	}
	return url
}

// queueState holds SQS queues by URL. A received message stays invisible until deleted; the
// visibility timeout is not modelled and long polls do not wait.
type queueState struct {
	seq    int
	queues map[string][]*message
}

type message struct {
	id, receipt, body string
	inFlight          bool
}

// SendMessage adds a message to the queue at url (queues exist on first use) and returns its id.
func (s *Server) SendMessage(url, body string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queues.enqueue(url, body)
}

// enqueue adds a message to the queue at url, made on first use, and returns its id.
func (q *queueState) enqueue(url, body string) string {
	if q.queues == nil {
		q.queues = map[string][]*message{}
	}
	q.seq++
	m := &message{id: fmt.Sprintf("00000000-0000-4000-8000-%012d", q.seq), body: body}
	q.queues[url] = append(q.queues[url], m)
	return m.id
}

// QueueLength returns how many messages the queue holds, in flight or not.
func (s *Server) QueueLength(url string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queues.queues[url])
}

// SendSpotInterruption queues the EventBridge event EC2 sends two minutes before reclaiming a
// spot instance.
func (s *Server) SendSpotInterruption(url, instanceID string) string {
	return s.SendMessage(url, ec2Event(s.now(), "EC2 Spot Instance Interruption Warning",
		map[string]string{"instance-id": instanceID, "instance-action": "terminate"}, instanceID))
}

// SendStateChange queues an "EC2 Instance State-change Notification" event.
func (s *Server) SendStateChange(url, instanceID, state string) string {
	return s.SendMessage(url, ec2Event(s.now(), "EC2 Instance State-change Notification", map[string]string{"instance-id": instanceID, "state": state}, instanceID))
}

// SendRebalanceRecommendation queues an "EC2 Instance Rebalance Recommendation" event.
func (s *Server) SendRebalanceRecommendation(url, instanceID string) string {
	return s.SendMessage(url, ec2Event(s.now(), "EC2 Instance Rebalance Recommendation", map[string]string{"instance-id": instanceID}, instanceID))
}

// SendScheduledChange queues an AWS Health scheduled-change event for the instance, starting at start.
func (s *Server) SendScheduledChange(url, instanceID string, start time.Time) string {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": "health-" + instanceID, "detail-type": "AWS Health Event", "source": "aws.health",
		"account": "123456789012", "time": s.now().UTC().Format(time.RFC3339), "region": DefaultRegion, "resources": []string{instanceID},
		"detail": map[string]any{"service": "EC2", "eventTypeCategory": "scheduledChange", "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
			"startTime": start.UTC().Format(time.RFC1123), "affectedEntities": []map[string]string{{"entityValue": instanceID}}},
	})
	return s.SendMessage(url, string(b))
}

// ec2Event is an EventBridge EC2 event at time now, as the interruption queue receives it.
func ec2Event(now time.Time, detailType string, detail map[string]string, instanceID string) string {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": fmt.Sprintf("evt-%s-%d", instanceID, len(detailType)), "detail-type": detailType, "source": "aws.ec2",
		"account": "123456789012", "time": now.UTC().Format(time.RFC3339), "region": DefaultRegion,
		"resources": []string{"arn:aws:ec2:" + DefaultRegion + ":123456789012:instance/" + instanceID}, "detail": detail,
	})
	return string(b)
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (s *Server) receiveMessage(r *Request) (any, error) {
	var in struct {
		QueueUrl            string
		MaxNumberOfMessages int
	}
	if err := json.Unmarshal(r.Body, &in); err != nil {
		return nil, &APIError{Code: "InvalidParameterValue", Message: err.Error()}
	}
	if in.MaxNumberOfMessages <= 0 {
		in.MaxNumberOfMessages = 1
	}
	type msg struct {
		MessageId, ReceiptHandle, Body, MD5OfBody string
	}
	out := []msg{}
	for _, m := range s.queues.queues[in.QueueUrl] {
		if len(out) == in.MaxNumberOfMessages {
			break
		}
		if m.inFlight {
			continue
		}
		m.inFlight = true
		s.queues.seq++
		m.receipt = fmt.Sprintf("rh-%d-%s", s.queues.seq, m.id)
		out = append(out, msg{m.id, m.receipt, m.body, md5Hex(m.body)})
	}
	return map[string]any{"Messages": out}, nil
}

func (s *Server) deleteMessage(r *Request) (any, error) {
	var in struct{ QueueUrl, ReceiptHandle string }
	if err := json.Unmarshal(r.Body, &in); err != nil {
		return nil, &APIError{Code: "InvalidParameterValue", Message: err.Error()}
	}
	q := s.queues.queues[in.QueueUrl]
	for i, m := range q {
		if m.receipt == in.ReceiptHandle && m.receipt != "" {
			s.queues.queues[in.QueueUrl] = append(q[:i:i], q[i+1:]...)
			return map[string]any{}, nil
		}
	}
	return nil, &APIError{Code: "ReceiptHandleIsInvalid", Message: "The input receipt handle is invalid."}
}

func (s *Server) sendMessage(r *Request) (any, error) {
	var in struct{ QueueUrl, MessageBody string }
	if err := json.Unmarshal(r.Body, &in); err != nil {
		return nil, &APIError{Code: "InvalidParameterValue", Message: err.Error()}
	}
	id := s.queues.enqueue(in.QueueUrl, in.MessageBody)
	return map[string]string{"MessageId": id, "MD5OfMessageBody": md5Hex(in.MessageBody)}, nil
}

// getQueueURL finds a queue by name: one made by CreateQueue, or used at a URL whose last path
// element is the name. Like SQS, it answers QueueDoesNotExist for any other name.
func (s *Server) getQueueURL(r *Request) (any, error) {
	var in struct{ QueueName, QueueOwnerAWSAccountId string }
	if err := json.Unmarshal(r.Body, &in); err != nil {
		return nil, &APIError{Code: "InvalidParameterValue", Message: err.Error()}
	}
	if in.QueueName == "" {
		return nil, &APIError{Code: "MissingParameter", Message: "The request must contain the parameter QueueName."}
	}
	urls := make([]string, 0, len(s.queues.queues))
	for url := range s.queues.queues {
		urls = append(urls, url)
	}
	slices.Sort(urls) // a name used at two URLs: the same answer every time
	for _, url := range urls {
		if path.Base(url) == in.QueueName {
			return map[string]string{"QueueUrl": url}, nil
		}
	}
	return nil, &APIError{Code: "QueueDoesNotExist", Message: "The specified queue does not exist."}
}
