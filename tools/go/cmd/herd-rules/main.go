// Command herd-rules prints what `herd rules` prints, byte for byte: the pauses (in
// milliseconds) that N independent clients draw after failures 1..K, one line a client, all
// drawn one client after another from one SplitMix64 seeded with --seed (docs/rng.md).
//
//	go run ./cmd/herd-rules --rule full --base-ms 100 --cap-ms 20000 --failures 10 --samples 1000 --seed 7
//
// crates/herd-cli/tests/suite/go_port.rs compares it with herd.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"herdtools/rng"
	"herdtools/rule"
)

// maxValues is the most pauses one invocation may print (samples × failures), as herd's.
const maxValues = 1_000_000_000

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "error:", err)
		}
		os.Exit(2)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("herd-rules", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("rule", "", "the rule: "+strings.Join(ruleNames(), ", "))
	baseMs := fs.Float64("base-ms", 100, "first pause of the exponential family, in milliseconds")
	capMs := fs.Float64("cap-ms", 20000, "largest pause, in milliseconds")
	pauseMs := fs.Float64("pause-ms", 1000, "the pause of constant, in milliseconds")
	multiplier := fs.Float64("multiplier", 1.6, "growth per failure for grpc (at least 1)")
	jitter := fs.Float64("jitter", 0.2, "± jitter fraction for grpc, in [0, 1]")
	failures := fs.Uint("failures", 10, "K: the number of failures (pauses per client)")
	samples := fs.Uint64("samples", 1, "N: the number of independent clients (lines)")
	seed := fs.String("seed", "1", "seed of the generator")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument '%s'", fs.Arg(0))
	}
	if *name == "" {
		return errors.New("the following required arguments were not provided: --rule <R>")
	}
	which, err := rule.Parse(*name)
	if err != nil {
		return fmt.Errorf("invalid value '%s' for '--rule <R>': %v", *name, err)
	}
	seedValue, err := strconv.ParseUint(*seed, 10, 64)
	if err != nil {
		return fmt.Errorf("invalid value '%s' for '--seed <S>': %v", *seed, err)
	}
	if *failures > 1<<32-1 {
		return fmt.Errorf("invalid value '%d' for '--failures <K>': above %d", *failures, uint32(1<<32-1))
	}
	var params rule.Params
	for _, f := range []struct {
		field string
		ms    float64
		to    *uint64
	}{{"--base-ms", *baseMs, &params.Base}, {"--cap-ms", *capMs, &params.Cap}, {"--pause-ms", *pauseMs, &params.Pause}} {
		if *f.to, err = rule.Millis(f.field, f.ms); err != nil {
			return err
		}
	}
	params.Multiplier, params.Jitter = *multiplier, *jitter
	r, err := rule.Build(which, params)
	if err != nil {
		return fmt.Errorf("%v (rule %v)", err, which)
	}
	if *failures == 0 {
		return errors.New("--failures must be at least 1")
	}
	if *samples == 0 {
		return errors.New("--samples must be at least 1")
	}
	if total := uint64(*failures) * *samples; *samples > maxValues || total > maxValues {
		return fmt.Errorf("--samples × --failures is above %d; at most %d pauses per run", maxValues, maxValues)
	}
	g := rng.New(seedValue)
	out := bufio.NewWriterSize(stdout, 1<<16)
	line := make([]byte, 0, 16*int(*failures))
	for i := uint64(0); i < *samples; i++ {
		line = line[:0]
		var state rule.State
		for k := uint(0); k < *failures; k++ {
			if k > 0 {
				line = append(line, ' ')
			}
			line = append(line, rule.FormatMs(r.Pause(&state, g))...)
		}
		line = append(line, '\n')
		if _, err := out.Write(line); err != nil {
			return err
		}
	}
	return out.Flush()
}

func ruleNames() []string {
	out := make([]string, len(rule.All))
	for i, n := range rule.All {
		out[i] = n.String()
	}
	return out
}
