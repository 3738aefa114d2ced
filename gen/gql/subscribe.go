package gql

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"

	"github.com/lore-dev/lore/gen/gql/model"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// Subscriptions mirror MCP's resource subscriptions: each follows the
// catalog's feed of committed changes (Catalog.Updates) and passes on the
// changes that touched its resource. With since, each first replays the
// change log after that sequence number through the changes_since tool, so
// a client that reconnects misses nothing.

func (r *subscriptionResolver) subscriptionResourceUpdated(ctx context.Context, uri string, since *int) (<-chan *model.ResourceUpdate, error) {
	return r.follow(ctx, uri, since)
}

func (r *subscriptionResolver) subscriptionNodeChanged(ctx context.Context, id string, since *int) (<-chan *model.ResourceUpdate, error) {
	return r.follow(ctx, mcp.NodeURI(graph.ID(id)), since)
}

func (r *subscriptionResolver) subscriptionTypeChanged(ctx context.Context, typ string, since *int) (<-chan *model.ResourceUpdate, error) {
	return r.follow(ctx, mcp.TypeURI(typ), since)
}

func (r *subscriptionResolver) subscriptionChanges(ctx context.Context, since *int) (<-chan *model.Change, error) {
	updates, err := r.changes(ctx, since)
	if err != nil {
		return nil, err
	}
	out := make(chan *model.Change)
	go func() {
		defer close(out)
		defer recoverGoroutine(ctx, r.log, "changes")
		for u := range updates {
			c := toChange(&u.Change)
			if c == nil {
				continue
			}
			select {
			case out <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// follow delivers the changes that touched uri.
func (r *subscriptionResolver) follow(ctx context.Context, uri string, since *int) (<-chan *model.ResourceUpdate, error) {
	updates, err := r.changes(ctx, since)
	if err != nil {
		return nil, err
	}
	out := make(chan *model.ResourceUpdate)
	go func() {
		defer close(out)
		defer recoverGoroutine(ctx, r.log, "follow "+uri)
		for u := range updates {
			c := toChange(&u.Change)
			if c == nil || !slices.Contains(u.URIs, uri) {
				continue
			}
			select {
			case out <- &model.ResourceUpdate{URI: uri, Change: c}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// replayPage is how many log entries one changes_since call reads while a
// subscription replays.
const replayPage = 1000

// changesPage is changes_since's output.
type changesPage struct {
	Changes []graph.Change `json:"changes"`
	More    bool           `json:"more"`
}

// changes delivers every committed change with the URIs it touched until
// ctx is done: with since, first those in the log after since, then the
// new ones. It starts following before it replays, so a change committed
// during the replay comes once, in order.
func (r *subscriptionResolver) changes(ctx context.Context, since *int) (<-chan mcp.Update, error) {
	ctx, cancel := context.WithCancel(ctx)
	updates, err := r.Cat.Updates(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	var page *changesPage
	if since != nil {
		// The first page is read now, so a bad cursor is the subscription's error.
		page, err = invoke[*changesPage](ctx, r.Cat, "changes_since", map[string]any{"cursor": *since, "limit": replayPage})
		if err != nil {
			cancel()
			return nil, err
		}
	}
	out := make(chan mcp.Update)
	go func() {
		defer cancel()
		defer close(out)
		defer recoverGoroutine(ctx, r.log, "change feed")
		var last uint64
		send := func(c graph.Change) bool {
			if c.Seq <= last {
				return true
			}
			last = c.Seq
			select {
			case out <- mcp.Update{Change: c, URIs: mcp.TouchedURIs(&c)}:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for page != nil {
			for _, c := range page.Changes {
				if !send(c) {
					return
				}
			}
			if !page.More || len(page.Changes) == 0 {
				break
			}
			page, err = invoke[*changesPage](ctx, r.Cat, "changes_since", map[string]any{"cursor": last, "limit": replayPage})
			if err != nil {
				if ctx.Err() == nil {
					r.log.ErrorContext(ctx, "replaying the change log", "error", err)
				}
				return
			}
		}
		for u := range updates {
			if !send(u.Change) {
				return
			}
		}
	}()
	return out, nil
}

// toChange converts a change-log entry to its GraphQL type through its
// JSON, the form every surface shows. The types have the same shape, so it
// cannot fail unless they drift apart; the subscriptions then skip the
// change (nil) rather than send a wrong one.
func toChange(c *graph.Change) *model.Change {
	var out model.Change
	data, err := json.Marshal(c)
	if err == nil {
		err = decode(data, &out)
	}
	if err != nil {
		return nil
	}
	return &out
}

// discard is the logger when Options give none.
var discard = slog.New(slog.DiscardHandler)
