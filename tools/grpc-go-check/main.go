// Command grpc-go-check reads gRPC service configs with grpc-go's own parser and prints what
// grpc-go makes of each method's retry policy, one JSON object a line, so that
// crates/herd-sim/tests/suite/check_grpc_go.rs can compare herd check's translation with it.
//
// It is built in GOPATH mode against Debian's golang-google-grpc-dev (grpc-go 1.33):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go run tools/grpc-go-check/main.go FILE...
//
// The parser is grpc-go's parseServiceConfig (service_config.go), reached as a resolver
// reaches it: a manual resolver's ClientConn.ParseServiceConfig. The parsed policy's fields
// are unexported, so they are read with reflect (which may read, not set, them).
package main

import (
	"encoding/json"
	"fmt"
	"io/ioutil"
	"os"
	"reflect"
	"sort"

	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver/manual"
)

// policy is one method's retry policy as grpc-go parsed it.
type policy struct {
	File         string   `json:"file"`
	Path         string   `json:"path"`
	MaxAttempts  int64    `json:"max_attempts"`
	InitialNs    int64    `json:"initial_backoff_ns"`
	MaxNs        int64    `json:"max_backoff_ns"`
	Multiplier   float64  `json:"multiplier"`
	Codes        []uint64 `json:"codes"`
	TimeoutNs    *int64   `json:"timeout_ns"`
	MaxTokens    *float64 `json:"max_tokens"`
	TokenRatio   *float64 `json:"token_ratio"`
	RetryIgnored bool     `json:"retry_ignored"`
}

func main() {
	r := manual.NewBuilderWithScheme("herd")
	cc, err := grpc.Dial("herd:///check", grpc.WithResolvers(r), grpc.WithInsecure())
	if err != nil {
		fail("dial: %v", err)
	}
	defer cc.Close()
	out := json.NewEncoder(os.Stdout)
	for _, file := range os.Args[1:] {
		text, err := ioutil.ReadFile(file)
		if err != nil {
			fail("%s: %v", file, err)
		}
		parsed := r.CC.ParseServiceConfig(string(text))
		if parsed.Err != nil {
			fail("%s: grpc-go refuses the service config: %v", file, parsed.Err)
		}
		sc, ok := parsed.Config.(*grpc.ServiceConfig)
		if !ok {
			fail("%s: unexpected config type %T", file, parsed.Config)
		}
		var tokens, ratio *float64
		if th := reflect.ValueOf(sc).Elem().FieldByName("retryThrottling"); !th.IsNil() {
			t, q := th.Elem().FieldByName("MaxTokens").Float(), th.Elem().FieldByName("TokenRatio").Float()
			tokens, ratio = &t, &q
		}
		paths := make([]string, 0, len(sc.Methods))
		for p := range sc.Methods {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, path := range paths {
			mc := sc.Methods[path]
			p := policy{File: file, Path: path, MaxTokens: tokens, TokenRatio: ratio}
			if mc.Timeout != nil {
				ns := int64(*mc.Timeout)
				p.TimeoutNs = &ns
			}
			rp := reflect.ValueOf(mc).FieldByName("retryPolicy")
			if rp.IsNil() {
				p.RetryIgnored = true
			} else {
				v := rp.Elem()
				p.MaxAttempts = v.FieldByName("maxAttempts").Int()
				p.InitialNs = v.FieldByName("initialBackoff").Int()
				p.MaxNs = v.FieldByName("maxBackoff").Int()
				p.Multiplier = v.FieldByName("backoffMultiplier").Float()
				codes := v.FieldByName("retryableStatusCodes")
				for _, k := range codes.MapKeys() {
					p.Codes = append(p.Codes, k.Uint())
				}
				sort.Slice(p.Codes, func(i, j int) bool { return p.Codes[i] < p.Codes[j] })
			}
			if err := out.Encode(p); err != nil {
				fail("%v", err)
			}
		}
	}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "grpc-go-check: "+format+"\n", args...)
	os.Exit(2)
}
