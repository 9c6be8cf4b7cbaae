package otlp

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// Codes of google.rpc.Status that the gateway answers with (google.rpc.Code).
const (
	CodeInvalidArgument   int32 = 3
	CodePermissionDenied  int32 = 7
	CodeResourceExhausted int32 = 8
	CodeInternal          int32 = 13
	CodeUnavailable       int32 = 14
	CodeUnauthenticated   int32 = 16
)

// EncodeResponse returns the ExportMetricsServiceResponse of a request
// that was stored, in e: with a partial_success when rejected points were
// refused (message names the first reason), empty otherwise.
func EncodeResponse(e Encoding, rejected int64, message string) ([]byte, error) {
	resp := pmetricotlp.NewExportResponse()
	if rejected > 0 || message != "" {
		message = strings.ToValidUTF8(message, "\uFFFD")
		ps := resp.PartialSuccess()
		ps.SetRejectedDataPoints(rejected)
		ps.SetErrorMessage(message)
	}
	var (
		b   []byte
		err error
	)
	if e == JSON {
		b, err = resp.MarshalJSON()
	} else {
		b, err = resp.MarshalProto()
	}
	if err != nil {
		return nil, fmt.Errorf("encode OTLP response: %w", err)
	}
	return b, nil
}

// statusJSON is google.rpc.Status in the JSON mapping (details left out:
// the gateway sends none).
type statusJSON struct {
	Code    int32  `json:"code"`
	Message string `json:"message"`
}

// EncodeStatus returns the google.rpc.Status body of a refused request, in
// e, as the OTLP/HTTP specification asks of every 4xx and 5xx answer.
func EncodeStatus(e Encoding, code int32, message string) []byte {
	// proto3 refuses a string that is not UTF-8, and a reason may quote
	// what the client sent.
	message = strings.ToValidUTF8(message, "\uFFFD")
	var (
		b   []byte
		err error
	)
	if e == JSON {
		b, err = json.Marshal(statusJSON{Code: code, Message: message})
	} else {
		b, err = proto.Marshal(&rpcstatus.Status{Code: code, Message: message})
	}
	if err != nil {
		// Neither can fail for a code and a string; a failure is a bug.
		panic("otlp: encode status: " + err.Error())
	}
	return b
}
