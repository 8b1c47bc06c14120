package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestPrintsOneLineAClient(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"--rule", "exponential", "--failures", "4", "--samples", "3", "--base-ms", "2.5"}, &out); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("2.5 5 10 20\n", 3)
	if out.String() != want {
		t.Fatalf("got %q", out.String())
	}
}

func TestBadInputIsOneErrorNamingTheFlag(t *testing.T) {
	cases := map[string][]string{
		"--base-ms":   {"--rule", "full", "--base-ms", "-1"},
		"--failures":  {"--rule", "full", "--failures", "0"},
		"--samples":   {"--rule", "full", "--samples", "0"},
		"--rule":      {"--rule", "nope"},
		"(rule grpc)": {"--rule", "grpc", "--multiplier", "0.5"},
		"at most":     {"--rule", "full", "--samples", "1000000000", "--failures", "2"},
		"--seed":      {"--rule", "full", "--seed", "-3"},
	}
	for want, args := range cases {
		var out bytes.Buffer
		err := run(args, &out)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: got %v, want an error naming %s", args, err, want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: printed %q before failing", args, out.String())
		}
	}
}
