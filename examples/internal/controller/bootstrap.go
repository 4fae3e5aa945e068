package controller

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/nodeplan/nodeplan"
)

// BootstrapTokens makes the controller mint one kubeadm bootstrap token per launch, for
// self-managed clusters whose nodes join with `kubeadm join`: a Secret of type
// bootstrap.kubernetes.io/token in kube-system (the only namespace the API server's bootstrap
// token authenticator reads), valid for TTL, whose token is set on the launch's
// NodeClaim.BootstrapToken before Provider.Create. The Secret is deleted as soon as the node
// registers (the kubelet has its own certificate by then), when the launch fails, when the
// claim goes without registering, and once it expires. A token read from one node's userData
// is thus useless after that node joined, and never joins a machine after TTL.
//
// The Secret's name is derived from the claim's name (bootstrap-token-<id>, id a hash of it), so
// a restarted controller finds the Secret of every claim it restores without listing Secrets:
// the controller needs create and delete on Secrets in kube-system, not read access to them. The
// Secret also has an owner reference to its NodeClaim, so the garbage collector removes it
// with the claim should the controller be gone.
//
// The zero value works, and one value may serve the Controllers of successive leadership terms.
type BootstrapTokens struct {
	// TTL is how long a token is valid; zero means the launch timeout plus the registration
	// timeout (20 minutes by default): an instance that has not joined by then is deleted.
	TTL time.Duration
	// Groups are the token's extra groups (auth-extra-groups); nil means kubeadm's
	// system:bootstrappers:kubeadm:default-node-token, which `kubeadm init` binds to the roles a
	// joining node needs (CSR creation and auto-approval, reading cluster-info and the kubelet
	// configuration).
	Groups []string

	mu sync.Mutex
	// pending are the claims whose Secret may still exist, by claim name, with when it expires
	// (zero when not known: restored after a restart).
	pending map[string]time.Time
	// seeded is the Controller whose table was last taken up into pending.
	seeded *Controller
}

// DefaultBootstrapGroup is the extra group kubeadm's join expects its tokens to carry.
const DefaultBootstrapGroup = "system:bootstrappers:kubeadm:default-node-token"

// bootstrapNamespace is where the API server's bootstrap authenticator reads token Secrets.
const bootstrapNamespace = metav1.NamespaceSystem

// tokenSweepBatch bounds the Secret deletions one sweep makes, so a restart with many claims
// does not hold the controller's loop.
const tokenSweepBatch = 20

func (b *BootstrapTokens) ttl(t Timeouts) time.Duration {
	if b.TTL > 0 {
		return b.TTL
	}
	return t.launch() + t.registration()
}

// BootstrapTokenID is the id of the bootstrap token of the claim named claim: six characters
// of [a-z0-9] from a hash of the name. Its Secret is bootstrap-token-<id> in kube-system.
func BootstrapTokenID(claim string) string {
	sum := sha256.Sum256([]byte("nodeplan bootstrap token " + claim))
	n := new(big.Int).SetBytes(sum[:])
	id := make([]byte, bootstrapapi.BootstrapTokenIDBytes)
	base := big.NewInt(int64(len(tokenAlphabet)))
	mod := new(big.Int)
	for i := range id {
		n.DivMod(n, base, mod)
		id[i] = tokenAlphabet[mod.Int64()]
	}
	return string(id)
}

// BootstrapTokenSecretName is the name of the Secret holding the claim's bootstrap token.
func BootstrapTokenSecretName(claim string) string {
	return bootstrapapi.BootstrapTokenSecretPrefix + BootstrapTokenID(claim)
}

// labelNodeClaim names the claim a token Secret is for.
const labelNodeClaim = "karpenter.sh/nodeclaim"

const tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

func randomTokenSecret() (string, error) {
	b := make([]byte, bootstrapapi.BootstrapTokenSecretBytes)
	max := big.NewInt(int64(len(tokenAlphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b[i] = tokenAlphabet[n.Int64()]
	}
	return string(b), nil
}

// createWithToken is Provider.Create, with a bootstrap token minted for the launch first when
// BootstrapTokens is set. The token's Secret is deleted again when the launch fails.
func (c *Controller) createWithToken(ctx context.Context, claim *nodeplan.NodeClaim) (*nodeplan.NodeClaim, error) {
	if c.BootstrapTokens == nil {
		return c.Provider.Create(ctx, claim)
	}
	token, err := c.mintBootstrapToken(ctx, claim.Name)
	if err != nil {
		return nil, err
	}
	claim.BootstrapToken = token
	launched, err := c.Provider.Create(ctx, claim)
	if err != nil {
		c.deleteBootstrapToken(context.WithoutCancel(ctx), claim.Name, "launch failed")
	}
	return launched, err
}

// mintBootstrapToken creates the claim's bootstrap token Secret and returns the token.
func (c *Controller) mintBootstrapToken(ctx context.Context, claim string) (string, error) {
	b := c.BootstrapTokens
	secret, err := randomTokenSecret()
	if err != nil {
		return "", fmt.Errorf("controller: bootstrap token for nodeclaim %s: %w", claim, err)
	}
	id := BootstrapTokenID(claim)
	expires := c.now().Add(b.ttl(c.Timeouts))
	groups := b.Groups
	if groups == nil {
		groups = []string{DefaultBootstrapGroup}
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      bootstrapapi.BootstrapTokenSecretPrefix + id,
			Namespace: bootstrapNamespace,
			Labels:    map[string]string{labelNodeClaim: claim, "app.kubernetes.io/managed-by": c.installation()},
		},
		Type: bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenDescriptionKey:      []byte("nodeplan: joins the node of nodeclaim " + claim + "; deleted once it registers"),
			bootstrapapi.BootstrapTokenIDKey:               []byte(id),
			bootstrapapi.BootstrapTokenSecretKey:           []byte(secret),
			bootstrapapi.BootstrapTokenExpirationKey:       []byte(expires.UTC().Format(time.RFC3339)),
			bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
			bootstrapapi.BootstrapTokenUsageSigningKey:     []byte("true"),
			bootstrapapi.BootstrapTokenExtraGroupsKey:      []byte(strings.Join(groups, ",")),
		},
	}
	if cl := c.tracker.Get(claim); cl != nil && cl.UID != "" {
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: claim, UID: types.UID(cl.UID)}}
	}
	if _, err := c.Client.CoreV1().Secrets(bootstrapNamespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another claim's name hashed to the same id and its token is still out: never
			// overwrite it. The launch fails; the pods are solved again under a new claim name.
			err = errors.New("a Secret of that name exists (another nodeclaim's token)")
		}
		return "", fmt.Errorf("controller: creating bootstrap token Secret %s/%s for nodeclaim %s: %w", bootstrapNamespace, s.Name, claim, err)
	}
	b.mu.Lock()
	if b.pending == nil {
		b.pending = map[string]time.Time{}
	}
	b.pending[claim] = expires
	b.mu.Unlock()
	c.log().Debug("created bootstrap token", "nodeclaim", claim, "token-id", id, "expiration", expires.UTC().Format(time.RFC3339))
	return id + "." + secret, nil
}

// deleteBootstrapToken deletes the claim's token Secret; a Secret already gone is fine. It
// reports whether the Secret is gone.
func (c *Controller) deleteBootstrapToken(ctx context.Context, claim, why string) bool {
	name := BootstrapTokenSecretName(claim)
	err := c.Client.CoreV1().Secrets(bootstrapNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		c.log().Error("could not delete bootstrap token", "nodeclaim", claim, "secret", bootstrapNamespace+"/"+name, "err", err)
		return false
	}
	c.BootstrapTokens.mu.Lock()
	delete(c.BootstrapTokens.pending, claim)
	c.BootstrapTokens.mu.Unlock()
	if err == nil {
		c.log().Debug("deleted bootstrap token", "nodeclaim", claim, "token-id", BootstrapTokenID(claim), "reason", why)
	}
	return true
}

// sweepBootstrapTokens deletes the token Secrets no launch needs any more: the claim's node
// registered, the claim is gone, or the token expired. The first sweep of a run also takes up
// every claim the table holds (restored after a restart), whose Secrets may have outlived the
// previous run.
func (c *Controller) sweepBootstrapTokens(ctx context.Context, now time.Time) {
	b := c.BootstrapTokens
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.pending == nil {
		b.pending = map[string]time.Time{}
	}
	if b.seeded != c {
		b.seeded = c
		for _, cl := range c.tracker.List() {
			if _, ok := b.pending[cl.Name]; !ok {
				b.pending[cl.Name] = time.Time{}
			}
		}
	}
	type due struct{ claim, why string }
	var todo []due
	for name, expires := range b.pending {
		if len(todo) == tokenSweepBatch {
			break
		}
		cl := c.tracker.Get(name)
		switch {
		case cl == nil:
			todo = append(todo, due{name, "nodeclaim gone"})
		case cl.Phase >= PhaseRegistered:
			todo = append(todo, due{name, "node registered"})
		case !expires.IsZero() && !now.Before(expires):
			todo = append(todo, due{name, "expired"})
		}
	}
	b.mu.Unlock()
	for _, d := range todo {
		if ctx.Err() != nil {
			return
		}
		c.deleteBootstrapToken(ctx, d.claim, d.why)
	}
}
