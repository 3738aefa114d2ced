package schema

import (
	"errors"

	sjson "github.com/segmentio/encoding/json"
)

// Decode decodes one JSON value into v the way the validator needs it,
// numbers as json.Number (so integers are judged exactly), and refuses data
// after the value. It is segmentio's decoder, already in the build through
// the MCP SDK: on the hot paths (every tool call's arguments, every
// property record read) it costs a fraction of encoding/json's Decoder,
// which allocates a buffer per value. Decode objects into a map made
// beforehand: into a nil map or an interface it makes one of 64 slots.
func Decode(data []byte, v any) error { return decodeWith(data, v, sjson.UseNumber) }

// DecodeStrict is Decode that also refuses object fields v does not
// declare (a struct's unknown keys).
func DecodeStrict(data []byte, v any) error {
	return decodeWith(data, v, sjson.UseNumber|sjson.DisallowUnknownFields)
}

func decodeWith(data []byte, v any, flags sjson.ParseFlags) error {
	rest, err := sjson.Parse(data, v, flags)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return errors.New("data after the JSON value")
	}
	return nil
}
