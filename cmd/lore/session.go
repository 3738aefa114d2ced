package main

import (
	"bytes"
	"encoding/json"

	"github.com/lore-dev/lore/mcp"
)

// A sessionState is what a relay of one MCP session must know of it to set
// it up again on another holder and to answer for a holder that went away:
// kept by the bridge from the messages it relays, or by the holder of an
// attached session (attach_unix.go), which hands it to the bridge when it
// lets the session go.
type sessionState struct {
	InitReq     json.RawMessage   `json:"initReq,omitempty"`     // the client's initialize request, to replay
	Initialized bool              `json:"initialized,omitempty"` // the client sent notifications/initialized
	Level       json.RawMessage   `json:"level,omitempty"`       // the client's last logging/setLevel request
	Subs        map[string]bool   `json:"subs,omitempty"`        // subscribed resource URIs
	SubReqs     map[string]string `json:"subReqs,omitempty"`     // pending subscribe requests: id → URI
	Inflight    map[string]bool   `json:"inflight,omitempty"`    // the client's requests not yet answered
	FromHolder  map[string]bool   `json:"fromHolder,omitempty"`  // the holder's requests the client has not answered
}

func newSessionState() sessionState {
	return sessionState{Subs: map[string]bool{}, SubReqs: map[string]string{}, Inflight: map[string]bool{}, FromHolder: map[string]bool{}}
}

// fromClient records what one client message means for the session, and
// reports whether to drop it (an answer to a request of a holder that
// went away).
func (st *sessionState) fromClient(m []byte) (drop bool) {
	rawID, method := mcp.MessageFields(m)
	id := string(rawID)
	switch {
	case method == "" && rawID != nil: // an answer to the holder's request
		if !st.FromHolder[id] {
			return true
		}
		delete(st.FromHolder, id)
	case rawID != nil && id != "null": // a request
		st.Inflight[id] = true
		switch method {
		case "initialize":
			st.InitReq = bytes.Clone(m)
		case "logging/setLevel":
			st.Level = bytes.Clone(m)
		case "resources/subscribe", "resources/unsubscribe":
			var p struct {
				Params struct {
					URI string `json:"uri"`
				} `json:"params"`
			}
			if json.Unmarshal(m, &p) == nil {
				if method == "resources/subscribe" {
					st.SubReqs[id] = p.Params.URI
				} else {
					delete(st.Subs, p.Params.URI)
				}
			}
		}
	case method == "notifications/initialized":
		st.Initialized = true
	case method == "notifications/cancelled":
		var p struct {
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(m, &p) == nil {
			delete(st.Inflight, string(p.Params.RequestID)) // the holder need not answer it
		}
	}
	return false
}

// fromHolder records what one holder message means for the session.
func (st *sessionState) fromHolder(m []byte) {
	rawID, method := mcp.MessageFields(m)
	id := string(rawID)
	switch {
	case method == "" && rawID != nil: // an answer
		delete(st.Inflight, id)
		if uri, ok := st.SubReqs[id]; ok {
			delete(st.SubReqs, id)
			if !bytes.Contains(m, []byte(`"error"`)) {
				st.Subs[uri] = true
			}
		}
	case method != "" && rawID != nil: // a request to the client
		st.FromHolder[id] = true
	}
}
