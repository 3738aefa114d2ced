package graph

import (
	"errors"

	sjson "github.com/segmentio/encoding/json"
)

// decodeJSON decodes one JSON value into v, numbers as json.Number, and
// refuses data after it. It is
// segmentio's decoder (already in the build through the MCP SDK): on the
// hot path of every property read it costs a fraction of encoding/json's
// Decoder, which allocates a buffer per value. Decode objects into a map
// made beforehand: into a nil map it makes one of 64 slots.
func decodeJSON(data []byte, v any) error {
	rest, err := sjson.Parse(data, v, sjson.UseNumber)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return errors.New("data after the JSON value")
	}
	return nil
}
