package mcp

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A person confirms deletes, not the model. When the client can ask its
// user (it declared elicitation), Lore always asks: confirm: true in the
// arguments does not count, since a model can write it, and an answer
// counts only if it answers a question Lore asked about these very
// arguments. The question travels with a requestState that Lore signs
// (HMAC-SHA256 with a key made per process) over the tool, a digest of
// the arguments without confirm, the protocol version, a nonce and an
// expiry; an answer must bring it back, and each is accepted once. On
// 2026-07-28 the client echoes it; on older sessions the SDK's middleware
// asks the user through elicitation/create and calls the handler again
// with it, and a client never sees one, so inputResponses it makes up are
// refused. A client that cannot ask anyone passes confirm: true itself, as
// REST and GraphQL callers do.

// confirmInput names the confirmation in inputRequests and inputResponses.
const confirmInput = "confirm"

// confirmTTL is how long a user has to answer.
const confirmTTL = 10 * time.Minute

// confirmForm is the form the user answers.
var confirmForm = json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Delete"}},"required":["confirm"]}`)

// A confirmer issues and checks the signed state of confirmation questions.
type confirmer struct {
	key []byte
	now func() time.Time

	mu   sync.Mutex
	used map[string]time.Time // nonces already answered, until they expire
}

func newConfirmer() *confirmer {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand)
	return &confirmer{key: key, now: time.Now, used: map[string]time.Time{}}
}

// question is what a requestState vouches for.
type question struct {
	Tool    string `json:"t"`
	Args    string `json:"a"` // argsDigest of the arguments, confirm left out
	Version string `json:"v"` // the protocol version of the request asked
	Nonce   string `json:"n"`
	Expires int64  `json:"e"` // Unix seconds
}

// gate returns the arguments to run a confirmable tool with, or the result
// that ends the call: the refusal of an answer Lore did not ask for, or
// the user's no.
func (c *confirmer) gate(t *Tool, req *mcpsdk.CallToolRequest) (json.RawMessage, *mcpsdk.CallToolResult) {
	p := req.Params
	answered := p.InputResponses != nil || p.RequestState != ""
	if !answered && !canElicit(req) {
		return p.Arguments, nil // nobody to ask: the caller's confirm: true stands
	}
	args := withoutConfirm(p.Arguments)
	if !answered {
		return args, nil // Invoke asks for confirmation; ask turns that into a question
	}
	if err := c.check(p.RequestState, t.Name, args, req.ProtocolVersion()); err != nil {
		return nil, toolError(&Error{Code: CodeConfirm, Message: "nothing was deleted: the confirmation " + err.Error() +
			"; call again without inputResponses and the user will be asked"})
	}
	er, ok := p.InputResponses[confirmInput].(*mcpsdk.ElicitResult)
	if !ok || er.Action != "accept" || er.Content["confirm"] != true {
		return nil, toolError(&Error{Code: CodeCancelled, Message: "the user did not confirm; nothing was deleted"})
	}
	return withConfirm(args), nil
}

// ask turns Invoke's CodeConfirm error into the question for the user,
// with the signed state the answer must bring back.
func (c *confirmer) ask(t *Tool, req *mcpsdk.CallToolRequest, args json.RawMessage, te *Error) *mcpsdk.CallToolResult {
	what, _, _ := strings.Cut(te.Message, ";")
	return &mcpsdk.CallToolResult{
		InputRequests: mcpsdk.InputRequestMap{confirmInput: &mcpsdk.ElicitParams{Message: what + ". Go ahead?", RequestedSchema: confirmForm}},
		RequestState:  c.issue(t.Name, args, req.ProtocolVersion()),
	}
}

// issue signs a question about a call.
func (c *confirmer) issue(tool string, args json.RawMessage, version string) string {
	nonce := make([]byte, 16)
	rand.Read(nonce)
	q, _ := json.Marshal(question{Tool: tool, Args: argsDigest(args), Version: version,
		Nonce: base64.RawURLEncoding.EncodeToString(nonce), Expires: c.now().Add(confirmTTL).Unix()})
	return base64.RawURLEncoding.EncodeToString(q) + "." + base64.RawURLEncoding.EncodeToString(c.mac(q))
}

func (c *confirmer) mac(payload []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(payload)
	return m.Sum(nil)
}

// check verifies that state is one this process issued for this call, not
// expired and not answered before, and marks it answered.
func (c *confirmer) check(state, tool string, args json.RawMessage, version string) error {
	b64, sig, ok := strings.Cut(state, ".")
	payload, err1 := base64.RawURLEncoding.DecodeString(b64)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, c.mac(payload)) {
		return errors.New("does not answer a question this server asked (no valid requestState)")
	}
	var q question
	if err := json.Unmarshal(payload, &q); err != nil {
		return errors.New("does not answer a question this server asked")
	}
	now := c.now()
	switch {
	case q.Tool != tool || q.Version != version || q.Args != argsDigest(args):
		return errors.New("answers a question about another call")
	case now.Unix() > q.Expires:
		return errors.New("came too late; the question expired")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, seen := c.used[q.Nonce]; seen {
		return errors.New("was already used")
	}
	if len(c.used) >= 1024 {
		for n, exp := range c.used {
			if now.After(exp) {
				delete(c.used, n)
			}
		}
	}
	c.used[q.Nonce] = time.Unix(q.Expires, 0)
	return nil
}

// argsDigest is a digest of a call's arguments that does not depend on
// key order, spacing or confirm.
func argsDigest(args json.RawMessage) string {
	canon := []byte(args)
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	if d.Decode(&m) == nil && m != nil {
		delete(m, confirmInput)
		if b, err := json.Marshal(m); err == nil {
			canon = b // maps marshal with sorted keys
		}
	}
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// canElicit reports whether the client can answer an elicitation: on
// 2026-07-28 as an input-required result, on older sessions as a request
// the SDK sends on the handler's behalf.
func canElicit(req *mcpsdk.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil
}

// withConfirm sets confirm: true in the arguments; arguments that are not
// an object are left for Invoke to refuse.
func withConfirm(args json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m[confirmInput] = json.RawMessage("true")
	out, _ := json.Marshal(m)
	return out
}

// withoutConfirm drops confirm from the arguments; arguments that are not
// an object are left for Invoke to refuse.
func withoutConfirm(args json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args
	}
	if _, ok := m[confirmInput]; !ok {
		return args
	}
	delete(m, confirmInput)
	out, _ := json.Marshal(m)
	return out
}
